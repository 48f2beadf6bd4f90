import { AppError } from '../../core/errors.ts';

/**
 * Runs tasks one at a time per key, in the order they arrived: a participant's signaling requests never
 * interleave with each other, so what a request checks (one producer per source, one transport per
 * direction, whether a microphone may be live) still holds when it records its result after an await
 * (mediasoup-demo's Room.js handles a peer's requests the same way). A key with `limit` tasks waiting
 * refuses more with room_busy.
 */
export class InOrder {
  readonly #limit: number;
  readonly #queues = new Map<string, { tail: Promise<void>; depth: number }>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Keys with tasks running or waiting. */
  get size(): number {
    return this.#queues.size;
  }

  run<T>(key: string, task: () => Promise<T> | T): Promise<T> {
    let q = this.#queues.get(key);
    if (!q) this.#queues.set(key, (q = { tail: Promise.resolve(), depth: 0 }));
    if (q.depth >= this.#limit) return Promise.reject(new AppError('room_busy', { message: 'Too many of your media requests are waiting; wait for their answers.' }));
    const queue = q;
    queue.depth++;
    const result = queue.tail.then(task);
    queue.tail = result.then(
      () => this.#done(key, queue),
      () => this.#done(key, queue),
    );
    return result;
  }

  #done(key: string, queue: { depth: number }): void {
    if (--queue.depth === 0 && this.#queues.get(key) === queue) this.#queues.delete(key);
  }
}
