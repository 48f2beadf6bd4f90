/** A promise that did not settle in time (Redis not answering, a handler too slow). */
export class TimeoutError extends Error {
  override name = 'TimeoutError';
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** `p`, or a TimeoutError after `ms`. `p` itself runs on; its late result is ignored. */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError(`${what}: no answer within ${Math.round(ms)} ms`)), Math.max(0, ms));
    }),
  ]).finally(() => clearTimeout(timer));
}
