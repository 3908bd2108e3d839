import { describe, expect, it } from 'vitest';
import { BrokerNodes, BrokerUrlListError, brokerUrlListProblem, parseBrokerUrls } from './broker-nodes.js';

const LIST = 'amqp://app:s3cret@10.0.0.1:5681/naalya,amqp://app:s3cret@10.0.0.2:5682/naalya,amqp://app:s3cret@10.0.0.3/naalya';

describe('parseBrokerUrls', () => {
  it('reads each node as amqplib reads a string URL: decoded credentials, escaped vhost, default port, query fields', () => {
    const [node] = parseBrokerUrls('amqps://us%40er:p%3Ass@[::1]/na%2Falya?heartbeat=5&frameMax=8192');
    expect(node).toMatchObject({ protocol: 'amqps', hostname: '::1', port: 5671, username: 'us@er', password: 'p:ss', vhost: 'na%2Falya', heartbeat: 5, frameMax: 8192 });
  });

  it('leaves out the credentials of a URL that has none, so amqplib logs in as guest as with the string', () => {
    const [node] = parseBrokerUrls('amqp://127.0.0.1');
    expect(node).not.toHaveProperty('username');
    expect(node).toMatchObject({ port: 5672, vhost: '' });
  });

  it('takes a comma-separated list, spaces around the commas allowed', () => {
    expect(parseBrokerUrls(LIST.replaceAll(',', ' , ')).map((node) => node.address)).toEqual(['10.0.0.1:5681', '10.0.0.2:5682', '10.0.0.3:5672']);
  });

  it.each([
    ['amqp://app:s3cret@10.0.0.1,http://app:s3cret@10.0.0.2', 'entry 2 of 2 must be an amqp:// or amqps:// URL'],
    ['amqp://app:s3cret@10.0.0.1,,amqp://app:s3cret@10.0.0.3', 'entry 2 of 3 is empty'],
    ['amqp://app:s3cret@10.0.0.1,not a url s3cret', 'entry 2 of 2 is not a URL'],
    ['amqp://app:s3cret@10.0.0.1,amqp://other:s3cret@10.0.0.2', 'entry 2 of 2 logs in as another user or to another vhost'],
    ['amqp://app:s3cret@10.0.0.1/a,amqp://app:s3cret@10.0.0.2/b', 'entry 2 of 2 logs in as another user or to another vhost'],
    ['http://app:s3cret@10.0.0.1', 'must be an amqp:// or amqps:// URL'],
    ['', 'is empty'],
  ])('refuses %s naming the entry and never its password', (value, reason) => {
    expect(() => parseBrokerUrls(value)).toThrow(BrokerUrlListError);
    const problem = brokerUrlListProblem(value);
    expect(problem).toContain(reason);
    expect(problem).not.toContain('s3cret');
  });
});

describe('BrokerNodes', () => {
  it('moves round-robin from its start, and its target reads the current node', () => {
    const nodes = new BrokerNodes(LIST, 1);
    expect(nodes.target.port).toBe(5682);
    nodes.advance();
    expect([nodes.target.hostname, nodes.target.port]).toEqual(['10.0.0.3', 5672]);
    nodes.advance();
    expect(nodes.target.port).toBe(5681);
    expect(nodes.target.username).toBe('app');
    expect(nodes.target.vhost).toBe('naalya');
  });

  it('starts each instance at a random node, so replicas spread over the cluster', () => {
    const starts = new Set(Array.from({ length: 200 }, () => new BrokerNodes(LIST).current.address));
    expect(starts.size).toBe(3);
  });

  it('stays on the one node of a single URL', () => {
    const nodes = new BrokerNodes('amqp://app:s3cret@10.0.0.1:5681');
    nodes.advance();
    expect(nodes.current.address).toBe('10.0.0.1:5681');
  });
});
