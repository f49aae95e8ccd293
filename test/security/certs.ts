/** Real certificates for the TLS tests, made with openssl in a temporary directory. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface Pki {
  readonly dir: string;
  /** File names inside `dir`. */
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A self-signed client certificate no CA vouches for. */
  readonly rogueCert: string;
  readonly rogueKey: string;
  /** A second server certificate from the same CA, for rotation. */
  readonly server2Cert: string;
  readonly server2Key: string;
  read(name: string): Buffer;
  cleanup(): void;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function leaf(dir: string, name: string, subject: string, ext: string): void {
  openssl(dir, 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
  fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
  openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-out', `${name}.crt`, '-extfile', `${name}.ext`);
}

export function makePki(): Pki {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-pki-'));
  openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt',
    '-days', '2', '-subj', '/CN=mxl-fabric-exporter test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  const server = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n';
  leaf(dir, 'server', '/CN=localhost', server);
  leaf(dir, 'server2', '/CN=localhost-rotated', server);
  leaf(dir, 'client', '/CN=prometheus', 'subjectAltName=DNS:prometheus.example,URI:spiffe://test/prometheus\nextendedKeyUsage=clientAuth\n');
  openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'rogue.key', '-out', 'rogue.crt',
    '-days', '2', '-subj', '/CN=rogue', '-addext', 'subjectAltName=DNS:prometheus.example');
  return {
    dir, caCert: 'ca.crt', serverCert: 'server.crt', serverKey: 'server.key', clientCert: 'client.crt', clientKey: 'client.key',
    rogueCert: 'rogue.crt', rogueKey: 'rogue.key', server2Cert: 'server2.crt', server2Key: 'server2.key',
    read: (name) => fs.readFileSync(path.join(dir, name)),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
