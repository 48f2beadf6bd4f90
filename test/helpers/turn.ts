import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';

/**
 * A real TURN relay for a test: Debian's coturn (`turnserver`), started with flags (never the system
 * service) in its REST-credential mode (`use-auth-secret`), as docs/networks.md configures it, plus
 * `allow-loopback-peers` because the test nodes' media listens on loopback. Stopped at teardown.
 */
export const TURNSERVER = process.env.AULA_TURNSERVER ?? '/usr/bin/turnserver';

/** A TCP port nobody listens on now (the relay takes it next; UDP on the same number is as free in practice). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, host, resolve));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** A CA and a certificate it signs for `ip` (cert.pem with its chain, key.pem, ca.pem in `dir`), made with openssl. */
function makeCertificate(dir: string, ip: string): void {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Aula test CA', '-keyout', 'ca.key', '-out', 'ca.pem');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${ip}`, '-keyout', 'key.pem', '-out', 'cert.csr');
  writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=IP:${ip}\nextendedKeyUsage=serverAuth\n`);
  ssl('x509', '-req', '-in', 'cert.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'leaf.pem');
  writeFileSync(join(dir, 'cert.pem'), readFileSync(join(dir, 'leaf.pem'), 'utf8') + readFileSync(join(dir, 'ca.pem'), 'utf8'));
}

export interface Relay {
  host: string;
  port: number;
  secret: string;
  /** What coturn printed (a refused credential shows here as a 401). */
  log(): string;
  /** With `tlsPort`: the base64 SHA-256 of the relay certificate's public key, which a test browser is told to trust (`--ignore-certificate-errors-spki-list`). */
  spki: string | null;
}

/**
 * `host`: the address coturn listens on (and relays from, unless `relayIp` says another: a relay that
 * browsers reach on one address and that reaches the media nodes from another, e.g. loopback).
 * `udp: false`: TCP listeners only (`--no-udp`; the relay to the media node is UDP still).
 */
/**
 * `tlsPort`: coturn also listens for `turns:` (TLS over TCP) on that port, with a certificate for its
 * address signed by a CA made for the test (`spki` names its key for a browser to trust).
 */
export async function startTurn(t: Test, o: { host?: string; relayIp?: string; port?: number; secret?: string; udp?: boolean; netns?: string; tlsPort?: number } = {}): Promise<Relay> {
  const host = o.host ?? '127.0.0.1';
  const port = o.port ?? (await freePort(host));
  const secret = o.secret ?? `turn-secret-${Math.random().toString(36).slice(2)}`;
  const dir = mkdtempSync(join(tmpdir(), 'aula-turn-'));
  if (o.tlsPort !== undefined) makeCertificate(dir, host);
  const relayBase = 50_000 + Math.floor(Math.random() * 140) * 100;
  const args = [
    '-n',
    `--listening-ip=${host}`,
    `--listening-port=${port}`,
    `--relay-ip=${o.relayIp ?? host}`,
    `--min-port=${relayBase}`,
    `--max-port=${relayBase + 99}`,
    '--use-auth-secret',
    `--static-auth-secret=${secret}`,
    '--realm=aula.test',
    '--fingerprint',
    '--allow-loopback-peers',
    '--no-multicast-peers',
    '--user-quota=12',
    '--no-cli',
    ...(o.tlsPort === undefined ? ['--no-tls'] : [`--tls-listening-port=${o.tlsPort}`, `--cert=${join(dir, 'cert.pem')}`, `--pkey=${join(dir, 'key.pem')}`, '--no-tlsv1', '--no-tlsv1_1']),
    '--no-dtls',
    ...(o.udp === false ? ['--no-udp'] : []),
    `--userdb=${join(dir, 'turndb')}`,
    `--pidfile=${join(dir, 'turn.pid')}`,
    '--log-file=stdout',
    '--simple-log',
    '--verbose',
  ];
  const child = o.netns ? spawn('ip', ['netns', 'exec', o.netns, TURNSERVER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }) : spawn(TURNSERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (out += String(d)));
  t.teardown(() => {
    child.kill('SIGTERM');
  });
  // listening once it says so (or the port answers)
  const until = Date.now() + 10_000;
  while (!/Total (UDP|TCP) servers/i.test(out) && !/listener opened on/i.test(out)) {
    if (child.exitCode !== null) throw new Error(`turnserver exited: ${out.slice(-2000)}`);
    if (Date.now() > until) throw new Error(`turnserver did not start: ${out.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 200));
  const spki = o.tlsPort === undefined ? null : execFileSync('sh', ['-c', 'openssl x509 -in leaf.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64'], { cwd: dir, encoding: 'utf8' }).trim();
  return { host, port, secret, log: () => out, spki };
}
