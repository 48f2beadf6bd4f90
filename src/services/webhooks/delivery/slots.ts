import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from '../../../platform/logger.ts';

/** What the slots need to know of a claimed message. */
export interface Slotted {
  endpointId: string;
  shard: number;
  /** The shard's epoch the claim was made under. */
  epoch: number;
  /** performance.now() at the claim. */
  claimedAt: number;
}

export interface SlotsOptions<M extends Slotted> {
  /** Sends in flight at once per endpoint. */
  concurrency: number;
  /** Sends in flight at once in this node. */
  maxInFlight: number;
  /** A message still waiting this long after its claim is not started (its attempt could outlast the claim). */
  sendByMs: number;
  log: Logger;
  /** The shards this node owns, with their epochs. */
  owned: () => ReadonlyMap<number, number>;
  /** The node is stopping: a freed slot starts nothing. */
  stopped: () => boolean;
  /** Sends one message; calls `answered` once the HTTP attempt is over. Settles once its outcome is recorded. */
  send: (m: M, answered: () => void) => Promise<void>;
  /** Messages that waited too long: their claims are to be given back, and claimed again. */
  late: (ms: M[]) => void;
  /** A slot was freed (and given to the next waiting message). */
  freed: (m: M) => void;
}

/**
 * The per-endpoint slots: at most `concurrency` sends in flight per endpoint and `maxInFlight` in the
 * node, as two levels of p-limit: a message takes a slot of its endpoint, then one of the node. Claimed
 * messages wait in their endpoint's queue, oldest due first; a slot that frees starts the next at once.
 * A slot is held for the HTTP attempt only: the outcome is recorded after it is freed.
 */
export class Slots<M extends Slotted> {
  readonly #o: SlotsOptions<M>;
  readonly #node: LimitFunction;
  /** A limit per endpoint this node holds anything for (dropped once it holds nothing). */
  readonly #endpoints = new Map<string, LimitFunction>();
  /**
   * Claimed messages not started. A message leaves it when it starts, when its shard moved on
   * (`dropStale`) or when the node stops (`drain`); one that reaches a slot and is not here is not sent.
   */
  readonly #waiting = new Set<M>();
  /** Messages that waited too long, by endpoint, handed back together at the end of the turn. */
  #late: Map<string, M[]> | null = null;
  /** Sends not yet recorded (tests wait for them). */
  readonly #sends = new Set<Promise<void>>();
  /** HTTP attempts in flight in this node. */
  #http = 0;
  /** Attempts started (claimed messages that left the queue), for `tick`. */
  #started = 0;

  constructor(o: SlotsOptions<M>) {
    this.#o = o;
    this.#node = pLimit(o.maxInFlight);
  }

  /** HTTP attempts in flight in this node. */
  get inFlight(): number {
    return this.#http;
  }

  /** Claimed messages waiting in this node. */
  get queued(): number {
    return this.#waiting.size;
  }

  /** Attempts started so far. */
  get started(): number {
    return this.#started;
  }

  /** Sends whose outcome is not recorded yet. */
  get sends(): ReadonlySet<Promise<void>> {
    return this.#sends;
  }

  /** What this node holds for an endpoint: sends in flight and claimed messages waiting. */
  held(endpointId: string): number {
    const limit = this.#endpoints.get(endpointId);
    return limit ? limit.activeCount + limit.pendingCount : 0;
  }

  /** The endpoints this node holds anything for. */
  heldIds(): string[] {
    return [...this.#endpoints.keys()];
  }

  /** Claimed messages, oldest due first, wait for a slot of their endpoint; those that may start now start. */
  add(ms: readonly M[]): void {
    for (const m of ms) {
      this.#waiting.add(m);
      let limit = this.#endpoints.get(m.endpointId);
      if (!limit) this.#endpoints.set(m.endpointId, (limit = pLimit(this.#o.concurrency)));
      const endpoint = limit;
      void endpoint(() => this.#node(() => this.#attempt(m))).then((sent) => {
        if (endpoint.activeCount + endpoint.pendingCount === 0 && this.#endpoints.get(m.endpointId) === endpoint) this.#endpoints.delete(m.endpointId);
        if (sent && !this.#o.stopped()) this.#o.freed(m);
      });
    }
  }

  /** Forgets waiting messages whose shard this node no longer holds at the epoch of their claim: their new owner sends them. */
  dropStale(owned: ReadonlyMap<number, number>): void {
    for (const m of this.#waiting) if (owned.get(m.shard) !== m.epoch) this.#waiting.delete(m);
  }

  /** Takes every waiting message out (the node stops): returns them, never started. */
  drain(): M[] {
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    return waiting;
  }

  /** In a slot of the endpoint and of the node: sends `m`, holding both until the HTTP attempt is over. Resolves true if it sent. */
  #attempt(m: M): Promise<boolean> | boolean {
    if (this.#o.stopped() || !this.#waiting.has(m)) return false;
    this.#waiting.delete(m);
    if (this.#o.owned().get(m.shard) !== m.epoch) return false; // the shard moved on: its new owner sends it
    if (performance.now() - m.claimedAt > this.#o.sendByMs) {
      this.#handBack(m);
      return false;
    }
    this.#http++;
    this.#started++;
    return new Promise<boolean>((free) => {
      const p: Promise<void> = this.#o
        .send(m, () => {
          this.#http--;
          free(true);
        })
        .finally(() => this.#sends.delete(p));
      this.#sends.add(p);
    });
  }

  #handBack(m: M): void {
    if (!this.#late) {
      this.#late = new Map();
      queueMicrotask(() => {
        const late = this.#late!;
        this.#late = null;
        for (const [endpointId, ms] of late) {
          this.#o.log.warn({ endpointId, count: ms.length }, 'claimed webhook messages waited too long in this node; their claims are released and they are claimed again');
          this.#o.late(ms);
        }
      });
    }
    const q = this.#late.get(m.endpointId);
    if (q) q.push(m);
    else this.#late.set(m.endpointId, [m]);
  }
}
