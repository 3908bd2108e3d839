import { brokerCredentialsOf } from '@naalya/rmq';

// RabbitMQ validates user_id against the connection's user, so the server can trust it to tell the worker's
// publishes from anyone else's. It is taken from the URL, read as amqplib reads it (guest when it names no user), so
// the two cannot disagree.
export const brokerUserOf = (rabbitmqUrl: string): string => brokerCredentialsOf(rabbitmqUrl).user;

// For the log only, never for the model: credentials masked, as in every broker log line.
export { describeBrokerError } from '@naalya/rmq';
