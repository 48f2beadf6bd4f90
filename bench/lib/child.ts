import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ServerChild<T> {
  name: string;
  pid: number;
  info: T;
  /** stdout/stderr lines that were not the ready line (with AULA_LOG_LEVEL=warn: warnings and errors). */
  logLines(): number;
  lastLines(): string[];
  /** Sends one JSON line on the server's stdin and waits for its `BENCH_ACK` line. */
  command(msg: unknown): Promise<void>;
  stop(): Promise<void>;
}

const READY = 'BENCH_READY ';
const ACK = 'BENCH_ACK';

/**
 * Starts `node --import tsx <script>` in its own process, pinned to `core` with taskset when given,
 * and resolves once the script prints `BENCH_READY {json}`. taskset execs node, so the pid is the server's.
 */
export function startServer<T>(
  name: string,
  script: string,
  env: Record<string, string>,
  core: number | null,
  opts: { timeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<ServerChild<T>> {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const node = [process.execPath, ...(opts.nodeArgs ?? []), '--import', 'tsx', script];
  const [cmd, ...args] = core === null ? node : ['taskset', '-c', String(core), ...node];
  const child: ChildProcess = spawn(cmd!, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const acks: (() => void)[] = [];
  let lines = 0;
  const tail: string[] = [];
  const note = (l: string) => {
    lines++;
    tail.push(l.length > 500 ? l.slice(0, 500) + '…' : l);
    if (tail.length > 20) tail.shift();
  };
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name}: not ready after ${timeoutMs} ms\n${tail.join('\n')}`));
    }, timeoutMs);
    let ready = false;
    createInterface({ input: child.stderr! }).on('line', note);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (ready && line.startsWith(ACK)) return acks.shift()?.();
      if (ready || !line.startsWith(READY)) return note(line);
      ready = true;
      clearTimeout(timer);
      resolve({
        name,
        pid: child.pid!,
        info: JSON.parse(line.slice(READY.length)) as T,
        logLines: () => lines,
        lastLines: () => [...tail],
        command: (msg) =>
          new Promise<void>((ok) => {
            acks.push(ok);
            child.stdin!.write(JSON.stringify(msg) + '\n');
          }),
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.stdin!.end();
          child.kill('SIGTERM');
          const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(kill);
        },
      });
    });
    void exited.then((code) => {
      if (ready) return;
      clearTimeout(timer);
      reject(new Error(`${name}: exited with ${code} before it was ready\n${tail.join('\n')}`));
    });
  });
}
