import type { Logger } from '../../../platform/logger.ts';

/**
 * Passes that never overlap: `kick` runs `pass` soon; kicks while a pass runs (or waits to run) make
 * one more pass after it, not one each. A kicked pass starts no sooner than `minIntervalMs` after the
 * start of the one before, so that under a steady stream of kicks each pass takes what came meanwhile
 * (a kick after a quiet spell runs at once).
 */
export class Passes {
  readonly #pass: () => Promise<unknown>;
  readonly #onError: (err: unknown) => void;
  readonly #minIntervalMs: number;
  #chain: Promise<void> = Promise.resolve();
  #queued = false;
  #lastStart = -Infinity;

  constructor(pass: () => Promise<unknown>, onError: (err: unknown) => void, minIntervalMs = 0) {
    this.#pass = pass;
    this.#onError = onError;
    this.#minIntervalMs = minIntervalMs;
  }

  kick(): void {
    if (this.#queued) return;
    this.#queued = true;
    void this.run(async () => {
      const wait = this.#lastStart + this.#minIntervalMs - performance.now();
      if (wait >= 1) await new Promise((r) => setTimeout(r, wait));
      this.#queued = false;
      this.#lastStart = performance.now();
      return this.#pass();
    }).catch(this.#onError);
  }

  /** Runs `fn` once every earlier pass has finished. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn, fn);
    this.#chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Settles when every pass started so far has. */
  idle(): Promise<void> {
    return this.#chain;
  }
}

/** Logs a pass still running after 10 s: every wake-up of this node waits behind it. */
export async function timed<T>(log: Logger, what: string, fn: () => Promise<T>): Promise<T> {
  const began = performance.now();
  const slow = setTimeout(() => log.warn({ pass: what, ms: Math.round(performance.now() - began) }, 'a webhook delivery pass is taking long'), 10_000);
  slow.unref();
  try {
    return await fn();
  } finally {
    clearTimeout(slow);
  }
}
