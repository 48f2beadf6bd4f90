import type { Node } from '../../src/server/node.ts';

/** A bench node process closes its node on SIGTERM or SIGINT (once) and exits; returns that shutdown. */
export function closeOnSignals(node: Node): (code: number) => Promise<void> {
  let closing = false;
  const shutdown = async (code: number) => {
    if (closing) return;
    closing = true;
    await node.close().catch(() => {});
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGINT', () => void shutdown(0));
  return shutdown;
}
