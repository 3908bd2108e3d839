import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { brokerTlsOptions } from './broker-tls.js';

const dir = mkdtempSync(join(tmpdir(), 'naalya-broker-tls-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('brokerTlsOptions', () => {
  it('adds nothing without RABBITMQ_CA_FILE: amqps:// then trusts the system CAs', () => {
    expect(brokerTlsOptions({})).toEqual({});
  });

  it('trusts the CA file RABBITMQ_CA_FILE names', () => {
    const file = join(dir, 'ca.pem');
    writeFileSync(file, '-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n');
    expect(brokerTlsOptions({ RABBITMQ_CA_FILE: file }).ca?.map(String)).toEqual([expect.stringContaining('BEGIN CERTIFICATE')]);
  });

  it('fails with the variable and the path when the file cannot be read', () => {
    const missing = join(dir, 'missing.pem');
    expect(() => brokerTlsOptions({ RABBITMQ_CA_FILE: missing })).toThrow(`RABBITMQ_CA_FILE names a file that cannot be read (${missing})`);
  });
});
