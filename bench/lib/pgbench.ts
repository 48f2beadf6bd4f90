import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { WrkResult } from './wrk.ts';

/**
 * The database's own baseline for the exchange: pgbench inserting one row per transaction (a row shaped
 * like a spent join token: a random text key, two short texts and a timestamp) into a table of the
 * run's scratch database, at the same concurrency as the exchange run, pinned where wrk would be.
 * Answers in wrk's shape, so the runner reports it as one more row.
 */
export const PGBENCH_TABLE = 'bench_single_row_insert';
const SCRIPT = `insert into ${PGBENCH_TABLE} (jti, device_id, session_id, used_at) values (md5(random()::text), 'tab-1', md5(random()::text), now());\n`;

export function pgbenchVersion(): string | null {
  try {
    return execFileSync('pgbench', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}

export async function createPgbenchTable(dbUrl: URL): Promise<void> {
  const sql = postgres(dbUrl.toString(), { max: 1, onnotice: () => {} });
  await sql.unsafe(`create table ${PGBENCH_TABLE} (jti text primary key, device_id text not null, session_id text not null, used_at timestamptz not null)`);
  await sql.end();
}

export interface PgbenchRun {
  dbUrl: URL;
  seconds: number;
  clients: number;
  threads: number;
  core: number | null;
  /** called with pgbench's pid once its clients are connected and it is running */
  onStart?: (pid: number) => void;
}

export async function runPgbench(run: PgbenchRun): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'aula-pgbench-'));
  try {
    const script = join(dir, 'insert.sql');
    writeFileSync(script, SCRIPT);
    const u = run.dbUrl;
    const cmd = ['pgbench', '-n', '-M', 'prepared', '-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username || 'postgres'),
      '-c', String(run.clients), '-j', String(run.threads), '-T', String(run.seconds), '-f', script, '-l', '--log-prefix', join(dir, 'tx'), '-P', '1', u.pathname.slice(1)];
    const [bin, ...args] = run.core === null ? cmd : ['taskset', '-c', String(run.core), ...cmd];
    const env = { ...process.env, ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}) };
    const child = spawn(bin!, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    let started = false;
    child.stdout.on('data', (d: Buffer) => (out += d));
    // -P 1 reports progress on stderr each second; the first report says it is running (clients connected)
    child.stderr.on('data', (d: Buffer) => {
      err += d;
      if (!started && /progress: /.test(err)) {
        started = true;
        run.onStart?.(child.pid!);
      }
    });
    const t0 = performance.now();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const wall = (performance.now() - t0) * 1000;
    if (code !== 0) throw new Error(`pgbench exited with ${code}:\n${out}\n${err}`);
    // per-transaction log lines: client_id transaction_no time_us script_no time_epoch time_us_part
    const latencies: number[] = [];
    for (const f of readdirSync(dir).filter((f) => f.startsWith('tx'))) {
      for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
        const us = Number(line.split(' ')[2]);
        if (line && Number.isFinite(us)) latencies.push(us);
      }
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    const failed = Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? 0);
    const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? 0);
    const seconds = Number(/duration: (\d+) s/.exec(out)?.[1] ?? run.seconds);
    return {
      requests: latencies.length,
      durationUs: latencies.length && tps ? (latencies.length / tps) * 1e6 : Math.min(wall, seconds * 1e6),
      bytes: 0,
      errors: { connect: 0, read: 0, write: 0, status: failed, timeout: 0 },
      latencyUs: { mean: latencies.reduce((a, b) => a + b, 0) / (latencies.length || 1), p50: at(0.5), p90: at(0.9), p99: at(0.99), max: latencies.at(-1) ?? 0 },
      statuses: {},
      issued: latencies.length,
      nextIndex: 0,
      wrapped: false,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
