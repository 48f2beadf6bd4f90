// A benchmark child process driven over stdin/stdout JSON lines: `BENCH_READY {json}` once, then one
// `BENCH_REPLY {"id","ok","value"|"error"}` per `{"id","cmd","args"}` line it reads. Other output lines
// (the node's logs at warn and above) are kept for the report.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface RpcChild<T> {
  name: string;
  pid: number;
  info: T;
  proc: ChildProcess;
  call<R = unknown>(cmd: string, args?: Record<string, unknown>, timeoutMs?: number): Promise<R>;
  /** Lines that were not protocol lines. */
  otherLines(): string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM (the node drains), SIGKILL after 15 s. */
  stop(): Promise<void>;
}

export function startRpcChild<T>(
  name: string,
  script: string,
  env: Record<string, string>,
  opts: { core?: number | null; nodeArgs?: string[]; timeoutMs?: number } = {},
): Promise<RpcChild<T>> {
  const node = [process.execPath, ...(opts.nodeArgs ?? []), '--import', 'tsx', script];
  const [cmd, ...args] = opts.core === undefined || opts.core === null ? node : ['taskset', '-c', String(opts.core), ...node];
  const proc = spawn(cmd!, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const other: string[] = [];
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  let seq = 0;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  void exited.then(({ code, signal }) => {
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(`${name} exited (${code ?? signal}) during a call; last lines:\n${other.slice(-10).join('\n')}`));
    }
    pending.clear();
  });
  createInterface({ input: proc.stderr! }).on('line', (l) => other.push(l));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${name}: not ready after ${opts.timeoutMs ?? 120_000} ms\n${other.slice(-20).join('\n')}`));
    }, opts.timeoutMs ?? 120_000);
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`${name}: exited with ${code} before it was ready\n${other.slice(-20).join('\n')}`));
    });
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (line.startsWith('BENCH_REPLY ')) {
        const r = JSON.parse(line.slice(12)) as { id: number; ok: boolean; value?: unknown; error?: string };
        const p = pending.get(r.id);
        if (!p) return;
        pending.delete(r.id);
        clearTimeout(p.timer);
        if (r.ok) p.resolve(r.value);
        else p.reject(new Error(`${name}: ${r.error}`));
        return;
      }
      if (!line.startsWith('BENCH_READY ')) {
        other.push(line);
        if (other.length > 2000) other.splice(0, 1000);
        return;
      }
      clearTimeout(timer);
      resolve({
        name,
        pid: proc.pid!,
        info: JSON.parse(line.slice(12)) as T,
        proc,
        otherLines: () => [...other],
        exited,
        call<R>(cmd: string, args: Record<string, unknown> = {}, timeoutMs = 600_000): Promise<R> {
          const id = ++seq;
          return new Promise<R>((res, rej) => {
            const t = setTimeout(() => {
              pending.delete(id);
              rej(new Error(`${name}: ${cmd} did not answer in ${timeoutMs} ms`));
            }, timeoutMs);
            pending.set(id, { resolve: res as (v: unknown) => void, reject: rej, timer: t });
            proc.stdin!.write(JSON.stringify({ id, cmd, args }) + '\n');
          });
        },
        async stop() {
          if (proc.exitCode !== null || proc.signalCode !== null) return;
          proc.kill('SIGTERM');
          const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
          await exited;
          clearTimeout(kill);
        },
      });
    });
  });
}
