import { generateMessageSigningKeyPair } from '@naalya/rmq';

/** The run signing key pair behind VALID_SERVER_ENV's RUN_SIGNING_KEY. */
export const VALID_SERVER_RUN_KEYS = generateMessageSigningKeyPair('k1');

/**
 * The least environment loadServerConfig accepts: the config specs change one variable of it at a time, so a variable
 * made required is added here once.
 */
export const VALID_SERVER_ENV = {
  DATABASE_URL: 'postgres://naalya_app:secret@127.0.0.1:5432/naalya',
  DATABASE_OWNER_URL: 'postgres://postgres@127.0.0.1:5432/naalya',
  RABBITMQ_URL: 'amqp://guest:guest@127.0.0.1:5672',
  JWT_SECRET: 'x'.repeat(40),
  DISPATCH_SIGNING_KEY: 'd'.repeat(40),
  RUN_SIGNING_KEY: VALID_SERVER_RUN_KEYS.privateKey,
};
