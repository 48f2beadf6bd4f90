/**
 * Webhook delivery, end to end: outbox rows fanned out to the endpoints that want them, then sent by
 * the member that owns each endpoint's actor, retried on the spec's schedule, every attempt logged.
 *
 * - Fan-out: any member claims a batch of undispatched outbox rows (`for update skip locked`) and, in
 *   the same transaction, writes one `webhook_messages` row per matching ACTIVE endpoint (a SKIPPED
 *   log row for a DISABLED one, so it can be redelivered) and marks the events dispatched. It runs
 *   as soon as this process commits an event, and on a poll for events other processes committed.
 *   Organizations whose plan lacks webhooks get nothing, except background events.
 * - Sending: a message row carries the shard of its endpoint's actor (`webhook:<id>`); only the
 *   member owning that shard claims it, in a transaction that checks the shard's epoch, and records
 *   the outcome in one fenced transaction (a former owner records nothing). At most
 *   `concurrency` sends per endpoint and `maxInFlight` per member are in flight.
 * - At-least-once: a message is PENDING until an outcome is recorded. A member that dies mid-send
 *   leaves it claimed; the next owner releases the claims of the shard it acquires and sends again,
 *   with the same event id.
 * - Retries after 1 min, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h (±10% jitter), 8 attempts; a
 *   `Retry-After` on 429/503 postpones the next attempt (up to 24 h) but never brings it forward; a
 *   410 ends the message and disables the endpoint.
 * - The endpoint's actor hears only results that change its state: the first failure (it starts the
 *   3-day auto-disable clock), the first success after failures, a 410.
 */
import { iso, type Clock } from '../clock.ts';
import type { Bus } from '../cluster/bus.ts';
import { shardOf, type Cluster } from '../cluster/cluster.ts';
import { assertEpoch, FencedError, lockEpochs } from '../cluster/fencing.ts';
import type { Sealer } from '../crypto.ts';
import type { Sql, Tx } from '../db/index.ts';
import { transaction } from '../db/tx.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';
import { planHas, type PlanName } from '../plans.ts';
import { onOutboxCommit } from '../services/outbox.ts';
import { attemptRow, insertAttempt, liveSecrets, sendAttempt, webhookActor, type AttemptInput } from './envelope.ts';
import { closeAgent, vettedAgent, type DeliveryResult } from './sender.ts';
import type { Agent } from 'undici';

/** Delays before attempts 2..8 (spec, receiver rule 4). */
export const RETRY_SCHEDULE_MS = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000, 12 * 3_600_000, 24 * 3_600_000] as const;
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;
export const RETRY_JITTER = 0.1;
/** The longest a receiver's `Retry-After` may postpone an attempt. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;
/** How long a claimed message is left alone by this member's own polls; a new owner releases claims at once. */
export const CLAIM_LEASE_MS = 60_000;
const FANOUT_BATCH = 500;
/** An endpoint's kept-alive connections are closed after this long without a send. */
const AGENT_IDLE_MS = 30_000;
const WAKE_CHANNEL = 'webhooks.wake';

/**
 * The delay before the next attempt after `attempts` attempts failed, or null when that was the last.
 * `random` in [0, 1) places it within ±10% of the schedule; a `Retry-After` longer than that wins.
 */
export function retryDelay(attempts: number, random: () => number, retryAfterSeconds?: number): number | null {
  if (attempts < 1 || attempts >= MAX_ATTEMPTS) return null;
  const base = RETRY_SCHEDULE_MS[attempts - 1]!;
  const jittered = Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random()));
  if (retryAfterSeconds === undefined) return jittered;
  return Math.max(jittered, Math.min(retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS));
}

export interface WebhookDeliveryOptions {
  sql: Sql;
  clock: Clock;
  cluster: Cluster;
  bus: Bus;
  log: Logger;
  /** Opens the sealed secrets (the data-at-rest key). */
  sealer: Sealer;
  allowPrivate: boolean;
  /** Sends in flight at once per endpoint. */
  concurrency: number;
  /** Sends in flight at once in this member. */
  maxInFlight: number;
  /** Jitter source; default Math.random. */
  random?: () => number;
  /** Test seams of the sender. */
  lookup?: AttemptInput['lookup'];
  ca?: AttemptInput['ca'];
}

interface Outcome {
  m: Claimed;
  epoch: number;
  startedAt: number;
  result: DeliveryResult;
}

/**
 * Collects items and hands them to `flush` in batches: what arrives while a flush runs goes in the next
 * one (at most `max` at a time). `add` settles when its item's batch has been flushed (or rejects with
 * that flush's error).
 */
class Batcher<T> {
  readonly #flush: (batch: T[]) => Promise<void>;
  readonly #max: number;
  #queue: { item: T; done: (err?: unknown) => void }[] = [];
  #running = false;

  constructor(flush: (batch: T[]) => Promise<void>, max: number) {
    this.#flush = flush;
    this.#max = max;
  }

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length) {
        const batch = this.#queue.splice(0, this.#max);
        try {
          await this.#flush(batch.map((b) => b.item));
          for (const b of batch) b.done();
        } catch (err) {
          for (const b of batch) b.done(err ?? new Error('flush failed'));
        }
      }
    } finally {
      this.#running = false;
    }
  }
}

interface Claimed {
  id: string;
  endpointId: string;
  eventId: string;
  attempts: number;
  shard: number;
  url: string;
  endpointStatus: 'ACTIVE' | 'DISABLED';
  failingSince: Date | null;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretExpiresAt: Date | null;
  orgId: string;
  type: string;
  data: unknown;
  eventCreatedAt: Date;
}

export class WebhookDelivery {
  readonly #o: WebhookDeliveryOptions;
  readonly #random: () => number;
  /** Sends in flight per endpoint. */
  readonly #busy = new Map<string, number>();
  /** Sends not yet recorded (tests wait for them). */
  readonly #sends = new Set<Promise<void>>();
  /** HTTP attempts in flight in this member. */
  #http = 0;
  readonly #recorder = new Batcher<Outcome>((batch) => this.#recordBatch(batch), 128);
  #timer: NodeJS.Timeout | null = null;
  #unlisten: (() => void) | null = null;
  #chain: Promise<void> = Promise.resolve();
  /** One vetted agent per endpoint, so its connections are kept alive between attempts. */
  readonly #agents = new Map<string, { agent: Agent; url: string; lastUsed: number }>();
  #wantFanOut = false;
  /** Owned shards where something may have become sendable since the last claim. */
  readonly #dirty = new Set<number>();
  #dirtyAll = false;
  #wantClaim = false;
  /** Whether the last fan-out made messages for shards this member owns. */
  #fannedOutHere = false;
  #stopped = false;

  constructor(opts: WebhookDeliveryOptions) {
    this.#o = opts;
    this.#random = opts.random ?? Math.random;
  }

  /** Polls every `pollMs`, and runs at once when this process commits events or another member wakes an owned shard. */
  start(pollMs: number): void {
    this.#stopped = false;
    this.#unlisten = onOutboxCommit(() => this.kick('fanOut'));
    this.#o.bus.subscribe(WAKE_CHANNEL, (m) => {
      const owned = this.#o.cluster.owned();
      const mine = (m.shards as number[] | undefined)?.filter((s) => owned.has(s)) ?? [];
      if (mine.length) this.kick('claim', mine);
    });
    this.#o.cluster.on('acquired', (shard) => {
      this.#releaseClaims(shard)
        .then(() => this.kick('claim', [shard]))
        .catch((err) => this.#o.log.warn({ err, shard }, 'could not release webhook claims of an acquired shard'));
    });
    this.#timer = setInterval(() => {
      this.kick('both', 'all');
      this.#closeIdleAgents(AGENT_IDLE_MS);
    }, pollMs);
    this.#timer.unref();
  }

  /**
   * The endpoint's agent: its connections are kept alive (each one pinned to the address it was
   * vetted for; a new one is vetted again), replaced when the URL changes, closed when idle.
   */
  #agentFor(endpointId: string, url: string): Agent {
    const now = performance.now();
    const held = this.#agents.get(endpointId);
    if (held && held.url === url) {
      held.lastUsed = now;
      return held.agent;
    }
    if (held) void closeAgent(held.agent);
    const agent = vettedAgent({
      allowPrivate: this.#o.allowPrivate,
      connections: this.#o.concurrency,
      ...(this.#o.lookup ? { lookup: this.#o.lookup } : {}),
      ...(this.#o.ca ? { ca: this.#o.ca } : {}),
    });
    this.#agents.set(endpointId, { agent, url, lastUsed: now });
    return agent;
  }

  #closeIdleAgents(idleMs: number): void {
    const cutoff = performance.now() - idleMs;
    for (const [id, a] of this.#agents) {
      if (a.lastUsed < cutoff && !this.#busy.has(id)) {
        this.#agents.delete(id);
        void closeAgent(a.agent);
      }
    }
  }

  /** Stops claiming; waits (up to `graceMs`) for sends in flight to record their outcome. */
  async stop(graceMs = 2000): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#unlisten?.();
    this.#unlisten = null;
    await this.#chain;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.#sends]), new Promise((r) => (t = setTimeout(r, graceMs).unref()))]);
    clearTimeout(t);
    for (const a of this.#agents.values()) void closeAgent(a.agent);
    this.#agents.clear();
  }

  get inFlight(): number {
    return this.#http;
  }

  /**
   * Runs a pass soon: passes never overlap; kicks during a pass make one more pass after it. `fanOut`:
   * events were committed; `claim`: something may have become sendable (a slot freed, a wake-up).
   */
  kick(what: 'fanOut' | 'claim' | 'both', shards: readonly number[] | 'all' = []): void {
    if (this.#stopped) return;
    if (shards === 'all') this.#dirtyAll = true;
    else for (const s of shards) this.#dirty.add(s);
    const queued = this.#wantFanOut || this.#wantClaim;
    if (what !== 'claim') this.#wantFanOut = true;
    if (what !== 'fanOut') this.#wantClaim = true;
    if (queued) return;
    void this.#exclusive(async () => {
      const fan = this.#wantFanOut;
      let claim = this.#wantClaim;
      this.#wantFanOut = this.#wantClaim = false;
      // every wake-up of this member waits behind a pass: one that takes long is worth a line
      const began = performance.now();
      const slow = setTimeout(() => this.#o.log.warn({ fanOut: fan, claim, ms: Math.round(performance.now() - began) }, 'a webhook delivery pass is taking long'), 10_000);
      slow.unref();
      try {
        await this.#passBody(fan, claim);
      } finally {
        clearTimeout(slow);
      }
    }).catch((err) => this.#o.log.warn({ err }, 'webhook delivery pass failed'));
  }

  /** One pass: fan out (when events were committed), then claim (when something may be sendable, or the fan-out made work here). */
  async #passBody(fan: boolean, claim: boolean): Promise<void> {
    if (fan) {
      let n: number;
      do {
        n = await this.fanOut();
        if (this.#fannedOutHere) claim = true;
      } while (n === FANOUT_BATCH);
    }
    if (claim) await this.#claimAndSend();
  }

  /** Runs `fn` once every earlier pass has finished (claims from two passes at once could race). */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn, fn);
    this.#chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * For tests on an injected clock: fans out every event, then sends everything due and waits for the
   * outcomes, until nothing is due. Returns the number of attempts it started.
   */
  async tick(): Promise<number> {
    let attempts = 0;
    for (;;) {
      const n = await this.#exclusive(async () => {
        while ((await this.fanOut()) > 0);
        this.#dirtyAll = true;
        return this.#claimAndSend();
      });
      await Promise.allSettled([...this.#sends]);
      attempts += n;
      if (n === 0 && this.#sends.size === 0) return attempts;
    }
  }

  /** Fans out one batch of undispatched events; returns how many events it took. */
  async fanOut(): Promise<number> {
    this.#fannedOutHere = false;
    const now = this.#o.clock.now();
    const wake = new Set<number>();
    const n = await transaction(this.#o.sql, async (tx) => {
      const events = await tx<{ id: string; orgId: string; type: string; background: boolean }[]>`
        select id, org_id, type, background from outbox where dispatched_at is null order by id limit ${FANOUT_BATCH} for update skip locked`;
      if (!events.length) return 0;
      const orgIds = [...new Set(events.map((e) => e.orgId))];
      const endpoints = await tx<{ id: string; orgId: string; events: string[]; status: 'ACTIVE' | 'DISABLED'; plan: PlanName }[]>`
        select e.id, e.org_id, e.events, e.status, o.plan from webhook_endpoints e join organizations o on o.id = e.org_id
        where e.org_id in ${tx(orgIds)}`;
      const byOrg = new Map<string, (typeof endpoints)[number][]>();
      for (const e of endpoints) {
        const list = byOrg.get(e.orgId);
        if (list) list.push(e);
        else byOrg.set(e.orgId, [e]);
      }
      const messages: Record<string, unknown>[] = [];
      for (const ev of events) {
        if (ev.type === 'webhook.test') continue;
        for (const ep of byOrg.get(ev.orgId) ?? []) {
          if (!ep.events.includes('*') && !ep.events.includes(ev.type)) continue;
          if (!ev.background && !planHas(ep.plan, 'webhooks')) continue;
          if (ep.status === 'ACTIVE') {
            const shard = shardOf(webhookActor(ep.id));
            wake.add(shard);
            messages.push({
              id: newId('whm', now),
              endpointId: ep.id,
              orgId: ep.orgId,
              eventId: ev.id,
              shard,
              status: 'PENDING',
              attempts: 0,
              nextAttemptAt: iso(now),
              createdAt: iso(now),
              updatedAt: iso(now),
            });
          } else {
            await insertAttempt(tx, { endpointId: ep.id, orgId: ep.orgId, messageId: null, eventId: ev.id, eventType: ev.type, attempt: 0, trigger: 'EVENT', at: now, result: 'SKIPPED' });
          }
        }
      }
      if (messages.length) await tx`insert into webhook_messages ${tx(messages as never)} on conflict (endpoint_id, event_id) do nothing`;
      await tx`update outbox set dispatched_at = ${iso(now)} where id in ${tx(events.map((e) => e.id))}`;
      return events.length;
    });
    if (wake.size) this.#wake(wake);
    return n;
  }

  #wake(shards: Set<number>): void {
    const owned = this.#o.cluster.owned();
    const elsewhere = [...shards].filter((s) => !owned.has(s));
    this.#fannedOutHere = elsewhere.length < shards.size;
    for (const s of shards) if (owned.has(s)) this.#dirty.add(s);
    if (elsewhere.length) this.#o.bus.publish(WAKE_CHANNEL, { shards: elsewhere }).catch(() => undefined);
  }

  /** A shard just acquired: whatever a former owner claimed and never recorded is due again now. */
  async #releaseClaims(shard: number): Promise<void> {
    await this.#o.sql`update webhook_messages set claimed_until = null
      where shard = ${shard} and status = 'PENDING' and claimed_until is not null`;
  }

  /** Claims what is due on the owned shards (within the concurrency bounds) and starts sending it; returns how many. */
  async #claimAndSend(): Promise<number> {
    if (this.#stopped) return 0;
    const owned = this.#o.cluster.owned();
    const room = this.#o.maxInFlight - this.#http;
    if (!owned.size || room <= 0) return 0;
    // Only the shards where something may have become sendable (the poll looks at all of them).
    const scan = this.#dirtyAll ? [...owned.keys()] : [...this.#dirty].filter((s) => owned.has(s));
    this.#dirtyAll = false;
    this.#dirty.clear();
    if (!scan.length) return 0;
    const now = this.#o.clock.now();
    const busyIds = [...this.#busy.keys()];
    const busyCounts = busyIds.map((id) => this.#busy.get(id)!);
    const claimed = await transaction(this.#o.sql, async (tx) => {
      // Fenced claim: only shards whose epoch is still ours; `for share` holds off a takeover until we commit.
      const epochs = await lockEpochs(tx, scan);
      const mine = [...epochs].filter(([shard, epoch]) => epoch === owned.get(shard)).map(([shard]) => shard);
      if (!mine.length) return [];
      // no JIT for the claim: its plan is small, but the loose scan's row estimates are high
      await tx`select set_config('jit', 'off', true)`;
      return tx<Claimed[]>`
        with pick as (
          select d.id, d.next_attempt_at from unnest(${mine}::int[]) as s(shard)
          -- the endpoints of this shard that have pending messages, one index probe each
          cross join lateral (
            with recursive eps(endpoint_id) as (
              (select endpoint_id from webhook_messages where status = 'PENDING' and shard = s.shard order by endpoint_id limit 1)
              union all
              select (select m.endpoint_id from webhook_messages m
                      where m.status = 'PENDING' and m.shard = s.shard and m.endpoint_id > eps.endpoint_id order by m.endpoint_id limit 1)
              from eps where eps.endpoint_id is not null
            )
            select endpoint_id from eps where endpoint_id is not null
          ) e
          left join unnest(${busyIds}::text[], ${busyCounts}::int[]) as b(endpoint_id, n) on b.endpoint_id = e.endpoint_id
          -- and of each, the oldest due messages, as many as its free slots
          cross join lateral (
            select m.id, m.next_attempt_at from webhook_messages m
            where m.shard = s.shard and m.endpoint_id = e.endpoint_id and m.status = 'PENDING' and m.next_attempt_at <= ${iso(now)}
              and (m.claimed_until is null or m.claimed_until <= ${iso(now)})
            order by m.next_attempt_at, m.id
            limit greatest(${this.#o.concurrency} - coalesce(b.n, 0), 0)
          ) d
          order by d.next_attempt_at, d.id limit ${room}
        ), claimed as (
          update webhook_messages m set claimed_until = ${iso(now + CLAIM_LEASE_MS)} from pick where m.id = pick.id
          returning m.id, m.endpoint_id, m.event_id, m.attempts, m.shard
        )
        select c.id, c.endpoint_id, c.event_id, c.attempts, c.shard, e.url, e.status as endpoint_status, e.failing_since,
          e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
          o.org_id, o.type, o.data, o.created_at as event_created_at
        from claimed c join webhook_endpoints e on e.id = c.endpoint_id join outbox o on o.id = c.event_id`;
    });
    for (const m of claimed) {
      this.#busy.set(m.endpointId, (this.#busy.get(m.endpointId) ?? 0) + 1);
      this.#http++;
      const p: Promise<void> = this.#send(m, () => {
        // the receiver's slot is free once its answer is in; the outcome is recorded after, in a batch
        const left = (this.#busy.get(m.endpointId) ?? 1) - 1;
        if (left > 0) this.#busy.set(m.endpointId, left);
        else this.#busy.delete(m.endpointId);
        this.#http--;
        this.kick('claim', [m.shard]);
      }).finally(() => this.#sends.delete(p));
      this.#sends.add(p);
    }
    // took all it could: there may be more on these shards
    if (claimed.length === room) for (const s of scan) this.#dirty.add(s);
    return claimed.length;
  }

  /** Sends one claimed message; `answered` runs once the HTTP attempt is over (whatever happens). The promise settles once its outcome is recorded. */
  async #send(m: Claimed, answered: () => void): Promise<void> {
    const { clock, log, cluster } = this.#o;
    let freed = false;
    const free = () => {
      if (!freed) {
        freed = true;
        answered();
      }
    };
    try {
      const epoch = cluster.owned().get(m.shard);
      if (epoch === undefined) return; // the shard moved on: its new owner sends it
      if (m.endpointStatus !== 'ACTIVE') {
        free();
        await this.#fenced(m.shard, epoch, (tx) => tx`update webhook_messages set status = 'CANCELLED', claimed_until = null, updated_at = ${iso(clock.now())}
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
        agent: this.#agentFor(m.endpointId, m.url),
      });
      free();
      await this.#recorder.add({ m, epoch, startedAt, result });
    } catch (err) {
      if (err instanceof FencedError) log.debug({ messageId: m.id, shard: m.shard }, 'webhook outcome not recorded: the shard moved on (its new owner sends again)');
      else log.warn({ err, messageId: m.id, endpointId: m.endpointId }, 'webhook send failed to complete; retried when its claim lapses');
    } finally {
      free();
    }
  }

  /**
   * Records a batch of outcomes in one transaction: the shards' epochs are checked first (outcomes of
   * shards this member no longer holds are dropped: their new owner sends again), then the log rows and
   * the messages' new states. Then the endpoint actors hear what changes them.
   */
  async #recordBatch(batch: Outcome[]): Promise<void> {
    const now = this.#o.clock.now();
    const rows = batch.map((o) => {
      const attempts = o.m.attempts + 1;
      const gone = o.result.status === 410;
      const delay = o.result.ok || gone ? null : retryDelay(attempts, this.#random, o.result.retryAfterSeconds);
      const next = delay === null ? null : now + delay;
      return { o, attempts, gone, next, status: o.result.ok ? 'SUCCEEDED' : next === null ? 'FAILED' : 'PENDING' };
    });
    const recorded = await transaction(this.#o.sql, async (tx) => {
      const shards = [...new Set(batch.map((o) => o.m.shard))];
      const current = await lockEpochs(tx, shards);
      const mine = rows.filter((r) => current.get(r.o.m.shard) === r.o.epoch);
      if (mine.length < rows.length) {
        this.#o.log.debug({ dropped: rows.length - mine.length }, 'webhook outcomes not recorded: their shards moved on (the new owners send again)');
      }
      if (!mine.length) return [];
      await tx`insert into webhook_attempts ${tx(
        mine.map((r) =>
          attemptRow({
            endpointId: r.o.m.endpointId,
            orgId: r.o.m.orgId,
            messageId: r.o.m.id,
            eventId: r.o.m.eventId,
            eventType: r.o.m.type,
            attempt: r.attempts,
            trigger: 'EVENT',
            at: r.o.startedAt,
            result: r.o.result,
            nextAttemptAt: r.next,
          }),
        ) as never,
      )}`;
      await tx`update webhook_messages m set attempts = v.attempts, status = v.status, claimed_until = null, updated_at = ${iso(now)},
          next_attempt_at = coalesce(v.next, m.next_attempt_at)
        from unnest(${mine.map((r) => r.o.m.id)}::text[], ${mine.map((r) => r.attempts)}::int[], ${mine.map((r) => r.status)}::text[],
          ${mine.map((r) => (r.next === null ? null : iso(r.next)))}::timestamptz[]) as v(id, attempts, status, next)
        where m.id = v.id and m.status = 'PENDING'`;
      return mine;
    });
    // Tell each endpoint's actor only what changes its state (its row says whether it is failing).
    const told = new Set<string>();
    for (const r of recorded) {
      const { m, result } = r.o;
      const failing = m.failingSince !== null;
      const event =
        r.gone ? { type: 'DELIVERY_FAILED', gone: true }
        : result.ok && failing ? { type: 'DELIVERY_SUCCEEDED' }
        : !result.ok && !failing ? { type: 'DELIVERY_FAILED' }
        : null;
      const key = `${m.endpointId}:${event?.type}:${r.gone}`;
      if (!event || told.has(key)) continue;
      told.add(key);
      await this.#o.cluster.ask(webhookActor(m.endpointId), event).catch((err) =>
        this.#o.log.warn({ err, endpointId: m.endpointId, event: event.type }, 'the endpoint actor did not hear a delivery outcome; the next outcome tells it'),
      );
    }
  }

  #fenced<T>(shard: number, epoch: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return transaction(this.#o.sql, async (tx) => {
      await assertEpoch(tx, shard, epoch);
      return fn(tx);
    });
  }
}
