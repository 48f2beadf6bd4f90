import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

const BIN = fileURLToPath(new URL('../../bin/aula.js', import.meta.url));

export interface WorkersProcess {
  /** The primary. */
  proc: ChildProcess;
  /** Every log line the primary and its workers printed (they share stdout), parsed. */
  logs: Record<string, unknown>[];
  stderr(): string;
  /** The next log line (from now on, or already seen after `from`) that matches. */
  line(pred: (l: Record<string, unknown>) => boolean, timeoutMs?: number, from?: number): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `aula serve --workers N` as a user would; killed (the primary, then its workers) at teardown. */
export function spawnWorkers(t: Test, n: number, env: Record<string, string>): WorkersProcess {
  const proc = spawn(process.execPath, [BIN, 'serve', '--workers', String(n)], {
    env: { ...process.env, AULA_ENV: 'test', AULA_HOST: '127.0.0.1', AULA_PORT: '0', AULA_LOG_LEVEL: 'info', AULA_MEDIA_WORKERS: '1', AULA_MEDIA_LISTEN_IP: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const waiters = new Set<{ pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }>();
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line);
    } catch {
      return;
    }
    logs.push(entry);
    for (const w of waiters) {
      if (w.pred(entry)) {
        waiters.delete(w);
        w.resolve(entry);
      }
    }
  });
  t.teardown(async () => {
    const workerPids = new Set(logs.filter((l) => l.msg === 'aula node listening').map((l) => l.pid as number));
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    for (const pid of workerPids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
  return {
    proc,
    logs,
    stderr: () => stderr,
    exited,
    line(pred, timeoutMs = 20_000, from = logs.length) {
      const seen = logs.slice(from).find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = {
          pred,
          resolve: (l: Record<string, unknown>) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`no matching log line in ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
  };
}
