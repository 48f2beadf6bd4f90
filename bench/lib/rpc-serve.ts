import { createInterface } from 'node:readline';

/**
 * The child side of bench/lib/rpc.ts for bench processes that are not nodes (the join storm's teachers
 * and flooder): answers `{"id","cmd","args"}` lines on stdin with `BENCH_REPLY` lines, after printing
 * `BENCH_READY {info}`. stdin closing calls `onClose`.
 */
export function serveRpc(commands: Record<string, (args: any) => Promise<unknown>>, info: unknown, onClose: () => void): void {
  createInterface({ input: process.stdin })
    .on('close', onClose)
    .on('line', (line) => {
      let msg: { id: number; cmd: string; args?: unknown };
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      const fn = commands[msg.cmd];
      (fn ? fn(msg.args ?? {}) : Promise.reject(new Error(`unknown command ${msg.cmd}`))).then(
        (value) => process.stdout.write(`BENCH_REPLY ${JSON.stringify({ id: msg.id, ok: true, value })}\n`),
        (err: Error) => process.stdout.write(`BENCH_REPLY ${JSON.stringify({ id: msg.id, ok: false, error: err.stack ?? String(err) })}\n`),
      );
    });
  process.stdout.write(`BENCH_READY ${JSON.stringify(info)}\n`);
}
