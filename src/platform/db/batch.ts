/**
 * Many callers' rows in one statement. While fewer than `concurrency` statements are in flight an item
 * goes at once (after `lingerMs`, when set, for company), and when they are all busy items wait and the
 * next statement carries every item that waited (up to `maxItems`). So a quiet server pays little in
 * latency, and a busy one pays one round trip, one plan and one commit for many rows: the group commit
 * a database does for concurrent transactions, done before the statement instead of after it.
 *
 * `run` answers each item in order (null, or nothing, where there is nothing to answer); an item's
 * promise rejects with the statement's error when `run` throws, and its caller decides what then.
 */
export class Batcher<I, O = void> {
  readonly #run: (items: I[]) => Promise<readonly (O | null)[] | void>;
  readonly #concurrency: number;
  readonly #maxItems: number;
  readonly #lingerMs: number;
  #inFlight = 0;
  #waiting: { item: I; resolve: (o: O | null) => void; reject: (err: unknown) => void }[] = [];
  /** Ends the linger of the statement about to start (the batch is full). */
  #full: (() => void) | null = null;

  constructor(run: (items: I[]) => Promise<readonly (O | null)[] | void>, opts: { concurrency: number; maxItems: number; lingerMs?: number }) {
    this.#run = run;
    this.#concurrency = opts.concurrency;
    this.#maxItems = opts.maxItems;
    this.#lingerMs = opts.lingerMs ?? 0;
  }

  add(item: I): Promise<O | null> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (this.#full && this.#waiting.length >= this.#maxItems) this.#full();
      else if (this.#inFlight < this.#concurrency) void this.#next(true);
    });
  }

  /** Starts a statement; one started by a new item lingers, one started by the end of another takes what waited meanwhile. */
  async #next(fresh: boolean): Promise<void> {
    if (!this.#waiting.length) return;
    this.#inFlight++;
    if (fresh && this.#lingerMs > 0 && this.#waiting.length < this.#maxItems) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#lingerMs);
        this.#full = () => (clearTimeout(timer), resolve());
      });
      this.#full = null;
    }
    const batch = this.#waiting.splice(0, this.#maxItems);
    if (!batch.length) {
      this.#inFlight--;
      return;
    }
    try {
      const out = await this.#run(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(out?.[i] ?? null));
    } catch (err) {
      for (const b of batch) b.reject(err ?? new Error('batch failed'));
    } finally {
      this.#inFlight--;
      void this.#next(false);
    }
  }
}
