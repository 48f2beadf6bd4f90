/**
 * What a runner made and must undo (databases, Redis keys, child processes), undone in reverse order at
 * the end, and on Ctrl-C or SIGTERM too.
 */
export const cleanups: (() => Promise<void>)[] = [];

export async function cleanup(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c().catch((err) => console.error(`cleanup: ${(err as Error).message}`));
}

process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
process.once('SIGTERM', () => void cleanup().then(() => process.exit(143)));
