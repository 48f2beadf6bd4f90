/**
 * Many callers' rows in one statement. While fewer than `concurrency` statements are in flight an item
 * goes at once, alone; when they are all busy, items wait and the next statement carries every item
 * that waited (up to `maxItems`). So a quiet server pays nothing in latency, and a busy one pays one
 * round trip, one plan and one commit for many rows: the group commit a database does for concurrent
 * transactions, done before the statement instead of after it.
 *
 * `run` answers each item in order, null where its row was not written; if it throws, every item of that
 * statement gets null and its caller does the work alone (so `run` may lose races and deadlocks freely).
 */
export class Batcher<I, O> {
  readonly #run: (items: I[]) => Promise<(O | null)[]>;
  readonly #concurrency: number;
  readonly #maxItems: number;
  #inFlight = 0;
  #waiting: { item: I; resolve: (o: O | null) => void }[] = [];

  constructor(run: (items: I[]) => Promise<(O | null)[]>, opts: { concurrency: number; maxItems: number }) {
    this.#run = run;
    this.#concurrency = opts.concurrency;
    this.#maxItems = opts.maxItems;
  }

  add(item: I): Promise<O | null> {
    return new Promise((resolve) => {
      this.#waiting.push({ item, resolve });
      if (this.#inFlight < this.#concurrency) this.#next();
    });
  }

  #next(): void {
    const batch = this.#waiting.splice(0, this.#maxItems);
    if (!batch.length) return;
    this.#inFlight++;
    this.#run(batch.map((b) => b.item))
      .then(
        (out) => batch.forEach((b, i) => b.resolve(out[i] ?? null)),
        () => batch.forEach((b) => b.resolve(null)),
      )
      .finally(() => {
        this.#inFlight--;
        this.#next();
      });
  }
}
