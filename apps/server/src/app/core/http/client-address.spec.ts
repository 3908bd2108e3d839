import { describe, expect, it } from 'vitest';
import { loadServerConfig } from '../config/server-config.js';
import { clientAddress, parseTrustedProxies, trustedProxiesProblem } from './client-address.js';

const proxies = parseTrustedProxies('10.0.0.0/8, 192.0.2.1, fd00::/8');

describe('clientAddress', () => {
  it('is the TCP peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress(parseTrustedProxies(''), '203.0.113.1', '198.51.100.1')).toBe('203.0.113.1');
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    expect(clientAddress(proxies, '203.0.113.1', '198.51.100.1, 10.0.0.1')).toBe('203.0.113.1');
  });

  it('behind trusted proxies, is the last entry that is not one of them', () => {
    expect(clientAddress(proxies, '10.0.0.2', '198.51.100.1, 203.0.113.5, 192.0.2.1')).toBe('203.0.113.5');
    expect(clientAddress(proxies, 'fd00::1', ['198.51.100.1', '203.0.113.5'])).toBe('203.0.113.5');
  });

  it('stops at an entry that is not an address: the last hop that wrote a valid one is the client', () => {
    expect(clientAddress(proxies, '10.0.0.2', 'junk, 10.0.0.3')).toBe('10.0.0.3');
    expect(clientAddress(proxies, '10.0.0.2', 'not-an-address')).toBe('10.0.0.2');
  });

  it('reads an IPv4-mapped IPv6 peer as its IPv4 address', () => {
    expect(clientAddress(proxies, '::ffff:10.0.0.2', '203.0.113.5')).toBe('203.0.113.5');
    expect(clientAddress(proxies, '::ffff:203.0.113.1', undefined)).toBe('203.0.113.1');
  });
});

describe('TRUSTED_PROXIES', () => {
  it('accepts addresses and CIDR blocks of both families, or nothing', () => {
    expect(trustedProxiesProblem('')).toBeNull();
    expect(trustedProxiesProblem('10.0.0.0/8, 192.0.2.1, ::1, fd00::/8')).toBeNull();
  });

  it('refuses an entry that is not one, naming its position, at start-up', () => {
    expect(trustedProxiesProblem('10.0.0.0/8, example.com')).toBe('entry 2 is not an IP address or CIDR block (e.g. 10.0.0.0/8)');
    expect(trustedProxiesProblem('10.0.0.0/33')).toBe('entry 1 has an invalid prefix length');
    expect(trustedProxiesProblem('10.0.0.0/8,')).toBe('entry 2 is not an IP address or CIDR block (e.g. 10.0.0.0/8)');
    expect(() => loadServerConfig({ TRUSTED_PROXIES: '10.0.0.0/x' })).toThrow(/TRUSTED_PROXIES is invalid: entry 1 has an invalid prefix length/);
  });
});
