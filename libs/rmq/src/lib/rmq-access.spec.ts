import { describe, expect, it } from 'vitest';
import { DEFAULT_EXCHANGE, brokerCredentialsOf, brokerDefinitions, brokerPermissions, onlyNames } from './rmq-access.js';
import { rmqNames, runEventsIngestQueue, runsDeadLetterQueue } from './rmq-names.js';

const names = rmqNames('agent-tools', 'agent-runs');
// RabbitMQ matches permission regexes with Erlang's re, unanchored; JavaScript's RegExp reads these the same way.
const allows = (regex: string, name: string) => new RegExp(regex).test(name);

describe('onlyNames', () => {
  it('matches exactly the names given: anchored, with dots taken literally', () => {
    const regex = onlyNames('agent-tools', 'agent-tools.calls');

    expect(allows(regex, 'agent-tools')).toBe(true);
    expect(allows(regex, 'agent-tools.calls')).toBe(true);
    for (const other of ['agent-tools.dead-letter', 'xagent-tools', 'agent-tools2', 'agent-toolsXcalls', '']) expect(allows(regex, other)).toBe(false);
  });
});

describe('brokerPermissions', () => {
  const { server, worker } = brokerPermissions(names);
  const everyName = [names.toolsQueue, names.toolsExchange, names.runsQueue, names.runEventsExchange, runEventsIngestQueue(names), names.deadLetterExchange, names.deadLetterQueue, runsDeadLetterQueue(names), DEFAULT_EXCHANGE, 'amq.gen-abc'];
  const allowedBy = (regex: string) => everyName.filter((name) => allows(regex, name));

  it('lets neither runtime user configure (declare, bind, delete) anything', () => {
    expect(allowedBy(server.configure)).toEqual([]);
    expect(allowedBy(worker.configure)).toEqual([]);
  });

  it('lets the worker write only the tools exchange and the run events exchange, never the default exchange replies use', () => {
    expect(allowedBy(worker.write)).toEqual([names.toolsExchange, names.runEventsExchange]);
  });

  it('lets the worker read only the runs queue and its direct reply-to, never the tools queue', () => {
    expect(allowedBy(worker.read)).toEqual([names.runsQueue]);
    expect(allows(worker.read, 'amq.rabbitmq.reply-to')).toBe(true);
  });

  it('lets the server write only the default exchange and read only the tools, ingest and runs dead-letter queues', () => {
    expect(allowedBy(server.write)).toEqual([DEFAULT_EXCHANGE]);
    expect(allowedBy(server.read)).toEqual([names.toolsQueue, runEventsIngestQueue(names), runsDeadLetterQueue(names)]);
  });
});

describe('brokerDefinitions', () => {
  const input = {
    adminUrl: 'amqp://guest:guest@127.0.0.1:5672/naalya',
    serverUrl: 'amqp://naalya_server:s%40cret@127.0.0.1:5672/naalya',
    workerUrl: 'amqp://naalya_worker:w@127.0.0.1:5672/naalya',
    names,
  };

  it('creates the vhost and both runtime users without tags, and gives the admin everything on the vhost', () => {
    const definitions = brokerDefinitions(input);

    expect(definitions.vhosts).toEqual([{ name: 'naalya' }]);
    expect(definitions.users).toEqual([
      { name: 'naalya_server', password: 's@cret', tags: [] },
      { name: 'naalya_worker', password: 'w', tags: [] },
    ]);
    expect(definitions.permissions).toEqual([
      { user: 'guest', vhost: 'naalya', configure: '.*', write: '.*', read: '.*' },
      { user: 'naalya_server', vhost: 'naalya', ...brokerPermissions(names).server },
      { user: 'naalya_worker', vhost: 'naalya', ...brokerPermissions(names).worker },
    ]);
  });

  it('refuses URLs that name different vhosts, or that share a user', () => {
    expect(() => brokerDefinitions({ ...input, workerUrl: 'amqp://naalya_worker:w@127.0.0.1:5672' })).toThrow(/worker's broker URL names vhost "\/"/);
    expect(() => brokerDefinitions({ ...input, workerUrl: input.serverUrl })).toThrow(/need different broker users/);
  });
});

describe('brokerCredentialsOf', () => {
  it('reads a URL as amqplib does: guest without a user, the vhost "/" without a path', () => {
    expect(brokerCredentialsOf('amqp://127.0.0.1:5672')).toEqual({ user: 'guest', password: 'guest', vhost: '/' });
    expect(brokerCredentialsOf('amqp://u:p@127.0.0.1/%2Fodd')).toEqual({ user: 'u', password: 'p', vhost: '/odd' });
  });
});
