import type { Member } from '../../src/member.ts';

/** A bench member process closes its member on SIGTERM or SIGINT (once) and exits; returns that shutdown. */
export function closeOnSignals(member: Member): (code: number) => Promise<void> {
  let closing = false;
  const shutdown = async (code: number) => {
    if (closing) return;
    closing = true;
    await member.close().catch(() => {});
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGINT', () => void shutdown(0));
  return shutdown;
}
