/**
 * Offers audio only when this person's connection stays poor: quality (network-quality, 0 to 5) at
 * POOR or below for POOR_FOR_MS. Offered once while it stays poor; once the connection is good again
 * (GOOD or above) a later poor spell offers it again. Timers are passed in, so a test drives them.
 */
export const POOR = 2;
export const GOOD = 4;
export const POOR_FOR_MS = 10_000;

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = { set: (fn, ms) => setTimeout(fn, ms), clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>) };

export class QualityWatch {
  #timer: unknown = null;
  #offered = false;

  constructor(
    private readonly offer: () => void,
    private readonly timers: Timers = realTimers,
  ) {}

  /** This person's quality now (undefined: not measured yet), and whether they already receive audio only. */
  observe(quality: number | undefined, audioOnly: boolean): void {
    if (quality !== undefined && quality >= GOOD) this.#offered = false;
    const poor = quality !== undefined && quality <= POOR && !audioOnly;
    if (!poor) return this.#cancel();
    if (this.#timer !== null || this.#offered) return;
    this.#timer = this.timers.set(() => {
      this.#timer = null;
      this.#offered = true;
      this.offer();
    }, POOR_FOR_MS);
  }

  #cancel(): void {
    if (this.#timer !== null) this.timers.clear(this.#timer);
    this.#timer = null;
  }

  stop(): void {
    this.#cancel();
  }
}
