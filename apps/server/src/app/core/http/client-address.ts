import { BlockList, isIP } from 'node:net';

/**
 * The address a request came from, for counting login attempts per client. X-Forwarded-For is a header any client can
 * write, so it is read only when the TCP peer is one of TRUSTED_PROXIES (the operator's load balancers); from any other
 * peer it is ignored, or a client could name a fresh address on every attempt and never be counted.
 */

export type TrustedProxies = { list: BlockList; empty: boolean };

/** `::ffff:10.0.0.1` (an IPv4 client on a dual-stack socket) is 10.0.0.1, so one client has one key and one rule. */
export const normaliseAddress = (address: string): string => {
  const trimmed = address.trim();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(trimmed);
  return (mapped ? mapped[1] : trimmed).toLowerCase();
};

/** Why one entry of a comma list of addresses or CIDR blocks is not one, or null when every entry is. */
export const trustedProxiesProblem = (value: string): string | null => {
  const entries = value.split(',').map((entry) => entry.trim());
  for (const [index, entry] of entries.entries()) {
    if (entry === '' && entries.length === 1) return null;
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    if (!family || rest.length > 0) return `entry ${index + 1} is not an IP address or CIDR block (e.g. 10.0.0.0/8)`;
    if (prefix !== undefined) {
      const bits = Number(prefix);
      if (!/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128)) return `entry ${index + 1} has an invalid prefix length`;
    }
  }
  return null;
};

/** TRUSTED_PROXIES, checked by the configuration schema first: a comma list of addresses and CIDR blocks, or empty. */
export const parseTrustedProxies = (value: string): TrustedProxies => {
  const list = new BlockList();
  let empty = true;
  for (const entry of value.split(',').map((item) => item.trim()).filter(Boolean)) {
    const [address = '', prefix] = entry.split('/');
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(normaliseAddress(address), type);
    else list.addSubnet(normaliseAddress(address), Number(prefix), type);
    empty = false;
  }
  return { list, empty };
};

const isTrusted = (proxies: TrustedProxies, address: string): boolean => {
  const family = isIP(address);
  return family !== 0 && !proxies.empty && proxies.list.check(address, family === 6 ? 'ipv6' : 'ipv4');
};

/**
 * The client's address: the TCP peer, unless the peer is a trusted proxy; then X-Forwarded-For is walked from its end
 * (each proxy appends the address it received from) past the trusted hops, and the first address not trusted is the
 * client. Entries before it were written by the client itself and are never used. An entry that is not an address
 * stops the walk at the last hop that wrote a valid one.
 */
export const clientAddress = (proxies: TrustedProxies, peer: string | undefined, forwardedFor: string | string[] | undefined): string => {
  let client = normaliseAddress(peer ?? '');
  if (!isTrusted(proxies, client) || forwardedFor === undefined) return client;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map(normaliseAddress);
  for (let index = hops.length - 1; index >= 0; index -= 1) {
    const hop = hops[index] ?? '';
    if (!isIP(hop)) return client;
    client = hop;
    if (!isTrusted(proxies, hop)) return client;
  }
  return client;
};
