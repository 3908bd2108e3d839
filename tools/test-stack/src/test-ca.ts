import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type TestCertificates = { caFile: string; certFile: string; keyFile: string };

const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

/**
 * A throwaway CA (the `openssl` binary) and a server certificate it signed for localhost and 127.0.0.1, written to
 * `dir` as `<prefix>ca.pem`, `<prefix>server.pem`, `<prefix>server.key`: what a TLS test trusts and serves.
 */
export const makeTestCertificates = (dir: string, prefix = ''): TestCertificates => {
  const file = (name: string) => join(dir, `${prefix}${name}`);
  openssl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=naalya test CA', '-keyout', file('ca.key'), '-out', file('ca.pem')]);
  openssl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', file('server.key'), '-out', file('server.csr')]);
  const extensions = file('server.ext');
  writeFileSync(extensions, 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(dir, ['x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', extensions, '-out', file('server.pem')]);
  return { caFile: file('ca.pem'), certFile: file('server.pem'), keyFile: file('server.key') };
};
