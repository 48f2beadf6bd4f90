/**
 * Webhook delivery, end to end: outbox rows fanned out to the endpoints that want them, then sent by
 * the node that owns each endpoint's actor, retried on the spec's schedule, every attempt logged.
 *
 * - Fan-out: any node reads a batch of undispatched outbox rows and the endpoints of their
 *   organizations, then in one statement marks the events dispatched (only those still undispatched:
 *   of two nodes fanning out the same events, one writes) and writes one `webhook_messages` row per
 *   matching ACTIVE endpoint (a SKIPPED log row for a DISABLED one, so it can be redelivered). It runs
 *   as soon as this process commits an event, and on a poll for events other processes committed.
 *   Organizations whose plan lacks webhooks get nothing, except background events.
 * - Sending: a message row carries the shard of its endpoint's actor (`webhook:<id>`); only the
 *   node owning that shard claims it, in a statement that checks the shard's epoch, and records
 *   the outcome in one fenced statement (a former owner records nothing). At most `concurrency`
 *   sends per endpoint and `maxInFlight` per node are in flight. A claim takes up to `concurrency`
 *   more per endpoint than it has free slots: those wait in this node, and a slot that frees starts
 *   the next at once instead of waiting for a claim.
 * - At-least-once: a message is PENDING until an outcome is recorded. A node that dies mid-send
 *   leaves it claimed; the next owner releases the claims of the shard it acquires and sends again,
 *   with the same event id.
 * - Retries after 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h (±10% jitter), 8 attempts; a
 *   `Retry-After` on 429/503 postpones the next attempt (up to 24 h) but never brings it forward; a
 *   410 ends the message and disables the endpoint.
 * - The endpoint's actor hears only results that change its state: the first failure (it starts the
 *   3-day auto-disable clock), the first success after failures, a 410.
 *
 * This file is the scheduler: when passes run and what wakes them. The parts are in delivery/:
 * retry.ts (the schedule), passes.ts, fan-out.ts, claims.ts, slots.ts (per-endpoint concurrency),
 * agents.ts (kept-alive connections), outcomes.ts.
 */
import { iso, type Clock } from '../../core/clock.ts';
import type { Bus } from '../../platform/cluster/bus.ts';
import type { Cluster } from '../../platform/cluster/cluster.ts';
import { assertEpoch, FencedError } from '../../platform/cluster/fencing.ts';
import type { Sealer } from '../../platform/crypto.ts';
import type { Batcher } from '../../platform/db/batch.ts';
import type { Sql, Tx } from '../../platform/db/index.ts';
import { transaction } from '../../platform/db/tx.ts';
import type { Logger } from '../../platform/logger.ts';
import type { Metrics } from '../../platform/metrics.ts';
import type { Outbox } from '../../platform/outbox.ts';
import { liveSecrets, sendAttempt, type AttemptInput } from './envelope.ts';
import { EndpointAgents } from './delivery/agents.ts';
import { CLAIM_SEND_BY_MS, Claims, type Claimed } from './delivery/claims.ts';
import { FANOUT_BATCH, FANOUT_INTERVAL_MS, fanOutBatch } from './delivery/fan-out.ts';
import { outcomeRecorder, type Outcome } from './delivery/outcomes.ts';
import { Passes, timed } from './delivery/passes.ts';
import { Slots } from './delivery/slots.ts';

export { MAX_ATTEMPTS, MAX_RETRY_AFTER_MS, RETRY_JITTER, RETRY_SCHEDULE_MS, retryDelay } from './delivery/retry.ts';
export { CLAIM_LEASE_MS } from './delivery/claims.ts';

/** An endpoint's kept-alive connections are closed after this long without a send. */
const AGENT_IDLE_MS = 30_000;
const WAKE_CHANNEL = 'webhooks.wake';

export interface WebhookDeliveryOptions {
  sql: Sql;
  clock: Clock;
  cluster: Cluster;
  bus: Bus;
  log: Logger;
  /** This node's outbox: a commit of events here starts a fan-out at once. */
  outbox: Outbox;
  /** Where delivery outcomes and lag are counted. */
  metrics?: Metrics;
  /** Opens the sealed secrets (the data-at-rest key). */
  sealer: Sealer;
  allowPrivate: boolean;
  /** Sends in flight at once per endpoint. */
  concurrency: number;
  /** Sends in flight at once in this node. */
  maxInFlight: number;
  /** Jitter source; default Math.random. */
  random?: () => number;
  /** Test seams of the sender. */
  lookup?: AttemptInput['lookup'];
  ca?: AttemptInput['ca'];
}

export class WebhookDelivery {
  readonly #o: WebhookDeliveryOptions;
  readonly #slots: Slots<Claimed>;
  readonly #claims: Claims;
  readonly #recorder: Batcher<Outcome>;
  readonly #agents: EndpointAgents;
  #timer: NodeJS.Timeout | null = null;
  #unlisten: (() => void) | null = null;
  /** Fan-out and claims run as two series of passes: a fan-out never waits behind a claim, nor a claim behind a fan-out. */
  readonly #fanOuts: Passes;
  readonly #claimPasses: Passes;
  #stopped = false;

  constructor(opts: WebhookDeliveryOptions) {
    this.#o = opts;
    const { sql, clock, cluster, log, concurrency, maxInFlight } = opts;
    this.#slots = new Slots<Claimed>({
      concurrency,
      maxInFlight,
      sendByMs: CLAIM_SEND_BY_MS,
      log,
      owned: () => cluster.owned(),
      stopped: () => this.#stopped,
      send: (m, answered) => this.#send(m, answered),
      late: (ms) => void this.#claims.release(ms).then(() => this.kick('claim', [...new Set(ms.map((m) => m.shard))])),
      freed: (m) => {
        const shards = this.#claims.after(m);
        if (shards) this.kick('claim', shards);
      },
    });
    this.#claims = new Claims({ sql, clock, cluster, log, concurrency, maxInFlight, slots: this.#slots });
    this.#recorder = outcomeRecorder({ sql, clock, cluster, log, metrics: opts.metrics, random: opts.random ?? Math.random });
    this.#agents = new EndpointAgents({ allowPrivate: opts.allowPrivate, connections: concurrency, lookup: opts.lookup, ca: opts.ca });
    const failed = (err: unknown) => this.#o.log.warn({ err }, 'webhook delivery pass failed');
    this.#fanOuts = new Passes(
      () =>
        timed(this.#o.log, 'fanOut', async () => {
          while ((await this.fanOut()) === FANOUT_BATCH && !this.#stopped);
        }),
      failed,
      FANOUT_INTERVAL_MS,
    );
    this.#claimPasses = new Passes(() => timed(this.#o.log, 'claim', () => this.#claimAndSend()), failed);
  }

  /** Polls every `pollMs`, and runs at once when this process commits events or another node wakes an owned shard. */
  start(pollMs: number): void {
    this.#stopped = false;
    this.#unlisten = this.#o.outbox.onCommit(() => this.kick('fanOut'));
    this.#o.bus.subscribe(WAKE_CHANNEL, (m) => {
      const owned = this.#o.cluster.owned();
      const mine = (m.shards as number[] | undefined)?.filter((s) => owned.has(s)) ?? [];
      if (mine.length) this.kick('claim', mine);
    });
    this.#o.cluster.on('acquired', (shard) => {
      this.#claims
        .releaseShard(shard)
        .then(() => this.kick('claim', [shard]))
        .catch((err) => this.#o.log.warn({ err, shard }, 'could not release webhook claims of an acquired shard'));
    });
    this.#timer = setInterval(() => {
      this.kick('both', 'all');
      this.#agents.closeIdle(AGENT_IDLE_MS, (id) => this.#slots.held(id) > 0);
    }, pollMs);
    this.#timer.unref();
  }

  /** Stops claiming; releases the claims of messages not yet started; waits (up to `graceMs`) for sends in flight to record their outcome. */
  async stop(graceMs = 2000): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#unlisten?.();
    this.#unlisten = null;
    await Promise.all([this.#fanOuts.idle(), this.#claimPasses.idle()]);
    await this.#claims.release(this.#slots.drain());
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.#slots.sends]), new Promise((r) => (t = setTimeout(r, graceMs).unref()))]);
    clearTimeout(t);
    this.#agents.closeAll();
  }

  get inFlight(): number {
    return this.#slots.inFlight;
  }

  /**
   * Runs a pass soon. `fanOut`: events were committed; `claim`: something may have become sendable
   * on these shards (a wake-up, an acquired shard); `both`, with 'all': the poll.
   */
  kick(what: 'fanOut' | 'claim' | 'both', shards: readonly number[] | 'all' = []): void {
    if (this.#stopped) return;
    if (what !== 'claim') this.#fanOuts.kick();
    if (what === 'fanOut') return;
    this.#claims.mark(shards);
    this.#claimPasses.kick();
  }

  /**
   * For tests on an injected clock: fans out every event, then sends everything due and waits for the
   * outcomes, until nothing is due. Returns the number of attempts started meanwhile.
   */
  async tick(): Promise<number> {
    const before = this.#slots.started;
    for (;;) {
      await this.#fanOuts.run(async () => {
        while ((await this.fanOut()) > 0);
      });
      const n = await this.#claimPasses.run(() => {
        this.#claims.mark('all');
        return this.#claimAndSend();
      });
      while (this.#slots.sends.size) await Promise.allSettled([...this.#slots.sends]);
      await this.#claimPasses.idle();
      if (n === 0 && this.#slots.sends.size === 0 && this.#slots.queued === 0) return this.#slots.started - before;
    }
  }

  /** Fans out one batch of undispatched events; returns how many events it read. */
  async fanOut(): Promise<number> {
    const { read, shards } = await fanOutBatch(this.#o.sql, this.#o.clock);
    if (shards.length) this.#wake(shards);
    return read;
  }

  #wake(shards: number[]): void {
    const owned = this.#o.cluster.owned();
    const elsewhere = shards.filter((s) => !owned.has(s));
    const here = shards.filter((s) => owned.has(s));
    if (here.length) this.kick('claim', here);
    if (elsewhere.length) this.#o.bus.publish(WAKE_CHANNEL, { shards: elsewhere }).catch(() => undefined);
  }

  #claimAndSend(): Promise<number> {
    if (this.#stopped) return Promise.resolve(0);
    return this.#claims.claim();
  }

  /** Sends one claimed message; `answered` runs once the HTTP attempt is over (whatever happens). The promise settles once its outcome is recorded. */
  async #send(m: Claimed, answered: () => void): Promise<void> {
    const { clock, log } = this.#o;
    let freed = false;
    const free = () => {
      if (!freed) {
        freed = true;
        answered();
      }
    };
    try {
      if (m.endpointStatus !== 'ACTIVE') {
        free();
        await this.#fenced(m.shard, m.epoch, (tx) => tx`update webhook_messages set status = 'CANCELLED', claimed_until = null, updated_at = ${iso(clock.now())}
          where id = ${m.id} and status = 'PENDING'`);
        return;
      }
      const startedAt = clock.now();
      const result = await sendAttempt({
        url: m.url,
        event: { id: m.eventId, orgId: m.orgId, type: m.type, data: m.data, createdAt: m.eventCreatedAt },
        secrets: liveSecrets(m, this.#o.sealer, startedAt),
        clock,
        allowPrivate: this.#o.allowPrivate,
        ...(this.#o.lookup ? { lookup: this.#o.lookup } : {}),
        ...(this.#o.ca ? { ca: this.#o.ca } : {}),
        agent: this.#agents.for(m.endpointId, m.url),
      });
      free();
      await this.#recorder.add({ m, startedAt, result });
    } catch (err) {
      if (err instanceof FencedError) log.debug({ messageId: m.id, shard: m.shard }, 'webhook outcome not recorded: the shard moved on (its new owner sends again)');
      else log.warn({ err, messageId: m.id, endpointId: m.endpointId }, 'webhook send failed to complete; retried when its claim lapses');
    } finally {
      free();
    }
  }

  #fenced<T>(shard: number, epoch: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return transaction(this.#o.sql, async (tx) => {
      await assertEpoch(tx, shard, epoch);
      return fn(tx);
    });
  }
}
