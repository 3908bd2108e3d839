import { readFileSync } from 'node:fs';

/** The variable naming a PEM file of the CA(s) that signed the broker's certificate, for amqps:// URLs. */
export const BROKER_CA_FILE_VARIABLE = 'RABBITMQ_CA_FILE';

const caByPath = new Map<string, Buffer>();

/**
 * The TLS part of amqplib's socket options, for every connection to the broker (one place, so no connection can
 * forget it). With RABBITMQ_CA_FILE set, the broker's certificate must chain to that CA instead of the system's; the
 * host name is checked either way (amqplib passes the URL's host as servername, Node verifies it against the
 * certificate). Used only by amqps:// URLs: amqplib ignores TLS options on a plain amqp:// socket.
 */
export const brokerTlsOptions = (env: NodeJS.ProcessEnv = process.env): { ca?: Buffer[] } => {
  const path = env[BROKER_CA_FILE_VARIABLE];
  if (!path) return {};
  let ca = caByPath.get(path);
  if (!ca) {
    try {
      ca = readFileSync(path);
    } catch (error) {
      throw new Error(`${BROKER_CA_FILE_VARIABLE} names a file that cannot be read (${path}): ${(error as Error).message}`, { cause: error });
    }
    caByPath.set(path, ca);
  }
  return { ca: [ca] };
};
