// Hand-written rather than p-limit: against two levels of p-limit 7.3.3 (commit f80170b) the sending
// node spent about 20 µs more CPU per event at 1,000 events a second, in 9 of 10 quiet pairs, and the
// p-limit version was no shorter, since the messages not started must still be kept beside the limits
// (bench/README.md, the webhooks scenario: "The per-endpoint slots: hand-written or p-limit").
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
 * node. Claimed messages wait here, oldest due first, for a slot of their endpoint; a slot that frees
 * starts the endpoint's next one at once, then those of endpoints that were waiting for the node's room.
 */
export class Slots<M extends Slotted> {
  readonly #o: SlotsOptions<M>;
  /** HTTP attempts in flight per endpoint. */
  readonly #busy = new Map<string, number>();
  /** Claimed messages waiting for a free slot of their endpoint, oldest due first. */
  readonly #queued = new Map<string, M[]>();
  #queuedTotal = 0;
  /** Endpoints that had a free slot but found this node's `maxInFlight` taken, in the order they asked. */
  readonly #waiting = new Set<string>();
  /** Sends not yet recorded (tests wait for them). */
  readonly #sends = new Set<Promise<void>>();
  /** HTTP attempts in flight in this node. */
  #http = 0;
  /** Attempts started (claimed messages that left the queue), for `tick`. */
  #started = 0;

  constructor(o: SlotsOptions<M>) {
    this.#o = o;
  }

  /** HTTP attempts in flight in this node. */
  get inFlight(): number {
    return this.#http;
  }

  /** Claimed messages waiting in this node. */
  get queued(): number {
    return this.#queuedTotal;
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
    return (this.#busy.get(endpointId) ?? 0) + (this.#queued.get(endpointId)?.length ?? 0);
  }

  /** The endpoints this node holds anything for. */
  heldIds(): string[] {
    return [...new Set([...this.#busy.keys(), ...this.#queued.keys()])];
  }

  /** Claimed messages, oldest due first, wait for a slot of their endpoint; those that may start now start. */
  add(ms: readonly M[]): void {
    const endpoints = new Set<string>();
    for (const m of ms) {
      const q = this.#queued.get(m.endpointId);
      if (q) q.push(m);
      else this.#queued.set(m.endpointId, [m]);
      this.#queuedTotal++;
      endpoints.add(m.endpointId);
    }
    for (const id of endpoints) this.#start(id);
  }

  /** Forgets waiting messages whose shard this node no longer holds at the epoch of their claim: their new owner sends them. */
  dropStale(owned: ReadonlyMap<number, number>): void {
    for (const [id, q] of this.#queued) {
      const keep = q.filter((m) => owned.get(m.shard) === m.epoch);
      if (keep.length === q.length) continue;
      this.#queuedTotal -= q.length - keep.length;
      if (keep.length) this.#queued.set(id, keep);
      else this.#queued.delete(id);
    }
  }

  /** Takes every waiting message out (the node stops): returns them, never started. */
  drain(): M[] {
    const waiting = [...this.#queued.values()].flat();
    this.#queued.clear();
    this.#waiting.clear();
    this.#queuedTotal = 0;
    return waiting;
  }

  /** Starts the endpoint's waiting messages while it has free slots and the node has room. */
  #start(endpointId: string): void {
    const q = this.#queued.get(endpointId);
    if (!q) return;
    const owned = this.#o.owned();
    const late: M[] = [];
    while (q.length && (this.#busy.get(endpointId) ?? 0) < this.#o.concurrency) {
      if (this.#http >= this.#o.maxInFlight) {
        this.#waiting.add(endpointId);
        break;
      }
      const m = q.shift()!;
      this.#queuedTotal--;
      if (owned.get(m.shard) !== m.epoch) continue; // the shard moved on: its new owner sends it
      if (performance.now() - m.claimedAt > this.#o.sendByMs) {
        late.push(m);
        continue;
      }
      this.#busy.set(endpointId, (this.#busy.get(endpointId) ?? 0) + 1);
      this.#http++;
      this.#started++;
      const p: Promise<void> = this.#o.send(m, () => this.#answered(m)).finally(() => this.#sends.delete(p));
      this.#sends.add(p);
    }
    if (!q.length) this.#queued.delete(endpointId);
    if (late.length) {
      this.#o.log.warn({ endpointId, count: late.length }, 'claimed webhook messages waited too long in this node; their claims are released and they are claimed again');
      this.#o.late(late);
    }
  }

  /** An HTTP attempt is over: its slot goes to the endpoint's next waiting message, or to an endpoint waiting for the node's room. */
  #answered(m: M): void {
    const left = (this.#busy.get(m.endpointId) ?? 1) - 1;
    if (left > 0) this.#busy.set(m.endpointId, left);
    else this.#busy.delete(m.endpointId);
    this.#http--;
    if (this.#o.stopped()) return;
    this.#start(m.endpointId);
    for (const id of this.#waiting) {
      if (this.#http >= this.#o.maxInFlight) break;
      this.#waiting.delete(id);
      this.#start(id);
    }
    this.#o.freed(m);
  }
}
