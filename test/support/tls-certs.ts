/**
 * Test certificates made with the `openssl` CLI (every call through execFile with an argument
 * array, never a shell string): a CA, server certificates signed by it (a good one for
 * `IP:127.0.0.1, DNS:localhost`, an expired one, one for a wrong host name only), a client
 * certificate for mutual TLS, and a second CA that nothing trusts.
 *
 * Keys are P-256 EC keys (fast to make, accepted by Redis and Node). `makeTestCerts()` is
 * cached per process and directory; the temp dir is removed when the process exits
 * (`reaper.ts`), so redis-server processes can read the files for as long as they run.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { trackDir } from './reaper.js';

/** A certificate and its private key: PEM contents (for Node's `tls` options) and file paths (for redis.conf / redis-cli). */
export interface CertFiles {
  /** PEM contents of the certificate. */
  readonly cert: string;
  /** PEM contents of the private key. */
  readonly key: string;
  readonly certFile: string;
  readonly keyFile: string;
}

export interface TestCerts {
  /** The directory holding every file. */
  readonly dir: string;
  /** The CA that signed every certificate below (give `ca.cert` as `tls.ca`). */
  readonly ca: CertFiles;
  /** A second, unrelated CA: trusting it instead of `ca` must fail verification. */
  readonly otherCa: CertFiles;
  /** Server certificate, SANs `IP:127.0.0.1, DNS:localhost`, valid now (serverAuth + clientAuth, so nodes can use it towards each other). */
  readonly server: CertFiles;
  /** Client certificate (CN `redis-ha-pool test client`, clientAuth) for `tls-auth-clients yes`. */
  readonly client: CertFiles;
  /** Server certificate with the same SANs as `server`, valid only from 2020-01-01 to 2021-01-01. */
  readonly expired: CertFiles;
  /** Server certificate, valid now, for `DNS:wrong.example` only. */
  readonly wrongHost: CertFiles;
}

const OPENSSL_CONFIG = `# written by test/support/tls-certs.ts
[ ca ]
default_ca = test_ca

[ test_ca ]
database = ./index.txt
new_certs_dir = ./newcerts
serial = ./serial
default_md = sha256
policy = policy_any
unique_subject = no
copy_extensions = none
email_in_dn = no

[ policy_any ]
commonName = supplied

[ req ]
distinguished_name = req_dn
prompt = no

[ req_dn ]
CN = unused

[ v3_ca ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[ server_good ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[ server_wrong_host ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:wrong.example
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[ client ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
`;

function openssl(cwd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, { cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`openssl ${args.join(' ')} failed in ${cwd}: ${`${stdout}${stderr}`.trim() || err.message}`, { cause: err }));
      else resolve();
    });
  });
}

const genKey = (cwd: string, file: string) =>
  openssl(cwd, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);

function read(dir: string, name: string): CertFiles {
  const certFile = path.join(dir, `${name}.crt`);
  const keyFile = path.join(dir, `${name}.key`);
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile, keyFile };
}

async function makeCa(dir: string, name: string, subject: string): Promise<void> {
  await genKey(dir, `${name}.key`);
  await openssl(dir, [
    'req', '-x509', '-new', '-config', 'openssl.cnf', '-extensions', 'v3_ca',
    '-key', `${name}.key`, '-subj', subject, '-days', '3650', '-sha256', '-out', `${name}.crt`,
  ]);
}

/** A leaf certificate signed by `ca.crt` with `openssl ca` (which, unlike `x509 -req`, takes explicit dates). */
async function makeLeaf(
  dir: string,
  name: string,
  subject: string,
  extensions: string,
  validity: { start: string; end: string },
): Promise<void> {
  await genKey(dir, `${name}.key`);
  await openssl(dir, ['req', '-new', '-config', 'openssl.cnf', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`]);
  await openssl(dir, [
    'ca', '-batch', '-notext', '-config', 'openssl.cnf', '-name', 'test_ca',
    '-cert', 'ca.crt', '-keyfile', 'ca.key', '-extensions', extensions,
    '-in', `${name}.csr`, '-out', `${name}.crt`, '-startdate', validity.start, '-enddate', validity.end,
  ]);
}

/** ASN.1 UTCTime (`YYMMDDHHMMSSZ`), as `openssl ca -startdate/-enddate` take it. */
function utcTime(d: Date): string {
  return d.toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z';
}

async function generate(dir: string): Promise<TestCerts> {
  const day = 24 * 3600 * 1000;
  // Valid from yesterday (no "not yet valid" from a clock a second behind) for 825 days.
  const valid = { start: utcTime(new Date(Date.now() - day)), end: utcTime(new Date(Date.now() + 825 * day)) };
  mkdirSync(path.join(dir, 'newcerts'), { recursive: true });
  writeFileSync(path.join(dir, 'openssl.cnf'), OPENSSL_CONFIG);
  writeFileSync(path.join(dir, 'index.txt'), '');
  writeFileSync(path.join(dir, 'serial'), '1000\n');
  await Promise.all([
    makeCa(dir, 'ca', '/CN=redis-ha-pool test CA'),
    makeCa(dir, 'other-ca', '/CN=redis-ha-pool untrusted CA'),
  ]);
  // `openssl ca` updates index.txt and serial: one signing at a time.
  await makeLeaf(dir, 'server', '/CN=localhost', 'server_good', valid);
  await makeLeaf(dir, 'client', '/CN=redis-ha-pool test client', 'client', valid);
  await makeLeaf(dir, 'expired', '/CN=localhost', 'server_good', { start: '200101000000Z', end: '210101000000Z' });
  await makeLeaf(dir, 'wrong-host', '/CN=wrong.example', 'server_wrong_host', valid);
  return {
    dir,
    ca: read(dir, 'ca'),
    otherCa: read(dir, 'other-ca'),
    server: read(dir, 'server'),
    client: read(dir, 'client'),
    expired: read(dir, 'expired'),
    wrongHost: read(dir, 'wrong-host'),
  };
}

const cache = new Map<string, Promise<TestCerts>>();

/**
 * Makes (once per process and `dir`) the test certificates. Without `dir` they go to a fresh
 * temp dir that is removed when the process exits.
 */
export function makeTestCerts(dir?: string): Promise<TestCerts> {
  const key = dir === undefined ? '' : path.resolve(dir);
  let p = cache.get(key);
  if (!p) {
    let target: string;
    if (dir === undefined) {
      target = mkdtempSync(path.join(os.tmpdir(), 'redis-ha-pool-certs-'));
      trackDir(target);
      // Lets topology.ts sweep the dir if this process is SIGKILLed before its exit handler runs.
      writeFileSync(path.join(target, 'owner.pid'), String(process.pid));
    } else {
      target = path.resolve(dir);
      mkdirSync(target, { recursive: true });
    }
    p = generate(target);
    // A failed run may be retried by the next caller.
    p.catch(() => cache.delete(key));
    cache.set(key, p);
  }
  return p;
}
