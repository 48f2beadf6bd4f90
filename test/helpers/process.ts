import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

const BIN = fileURLToPath(new URL('../../bin/aula.js', import.meta.url));

export interface NodeProcess {
  proc: ChildProcess;
  port: number;
  url: string;
  /** Every log line the node printed, parsed. */
  logs: Record<string, unknown>[];
}

/** Runs `aula serve` as a separate OS process on port 0 and waits for it to listen. */
export function spawnNode(t: Test, env: Record<string, string>): Promise<NodeProcess> {
  const proc = spawn(process.execPath, [BIN, 'serve'], {
    env: { ...process.env, AULA_ENV: 'test', AULA_HOST: '127.0.0.1', AULA_PORT: '0', AULA_LOG_LEVEL: 'info', AULA_MEDIA_WORKERS: '1', AULA_MEDIA_LISTEN_IP: '127.0.0.1', ...env },
    // the IPC channel lets a node notice when this test process goes away and exit with it
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node did not start: ${stderr}`)), 30_000);
    proc.once('exit', (code) => reject(new Error(`node exited with ${code}: ${stderr}`)));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      logs.push(entry);
      if (entry.msg === 'aula node listening') {
        clearTimeout(timer);
        resolve({ proc, port: entry.port as number, url: entry.baseUrl as string, logs });
      }
    });
  });
}
