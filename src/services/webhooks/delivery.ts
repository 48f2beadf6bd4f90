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
 */
import { iso, type Clock } from '../../core/clock.ts';
import type { Bus } from '../../platform/cluster/bus.ts';
import { shardOf, type Cluster } from '../../platform/cluster/cluster.ts';
import { assertEpoch, FencedError } from '../../platform/cluster/fencing.ts';
import type { Sealer } from '../../platform/crypto.ts';
import { Batcher } from '../../platform/db/batch.ts';
import type { Sql, Tx } from '../../platform/db/index.ts';
import { transaction } from '../../platform/db/tx.ts';
import { newId } from '../../platform/ids.ts';
import type { Logger } from '../../platform/logger.ts';
import { planHas, type PlanName } from '../../core/plans.ts';
import type { Metrics } from '../../platform/metrics.ts';
import type { Outbox } from '../../platform/outbox.ts';
import { attemptRow, liveSecrets, sendAttempt, webhookActor, type AttemptInput } from './envelope.ts';
import { closeAgent, DELIVERY_TIMEOUT_MS, vettedAgent, type DeliveryResult } from './sender.ts';
import type { Agent } from 'undici';

/** Delays before attempts 2..8 (spec, receiver rule 4). */
export const RETRY_SCHEDULE_MS = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000, 12 * 3_600_000, 24 * 3_600_000] as const;
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;
export const RETRY_JITTER = 0.1;
/** The longest a receiver's `Retry-After` may postpone an attempt. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;
/** How long a claimed message is left alone by this node's own polls; a new owner releases claims at once. */
export const CLAIM_LEASE_MS = 60_000;
/**
 * A claimed message still waiting in this node this long after its claim is not sent: its attempt
 * (up to the 10 s deadline) could outlast the claim. Its claim is released and it is claimed again.
 */
const CLAIM_SEND_BY_MS = CLAIM_LEASE_MS - DELIVERY_TIMEOUT_MS - 10_000;
const FANOUT_BATCH = 500;
/**
 * How long an outcome waits for others to share its statement. The endpoint's slot is free already
 * (the message stays claimed until then), so this delays nothing a receiver sees; at a thousand sends
 * a second it makes one statement (and one commit) of about twenty outcomes instead of one or two.
 */
const OUTCOME_LINGER_MS = 20;
/**
 * The shortest time between the starts of two fan-out passes. Every commit of an event kicks one; at a
 * thousand events a second, passes back to back took two events each (and woke the senders as often).
 * A pass after a quiet spell starts at once.
 */
const FANOUT_INTERVAL_MS = 4;
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

interface Outcome {
  m: Claimed;
  startedAt: number;
  result: DeliveryResult;
}

/**
 * Passes that never overlap: `kick` runs `pass` soon; kicks while a pass runs (or waits to run) make
 * one more pass after it, not one each. A kicked pass starts no sooner than `minIntervalMs` after the
 * start of the one before, so that under a steady stream of kicks each pass takes what came meanwhile
 * (a kick after a quiet spell runs at once).
 */
class Passes {
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
async function timed<T>(log: Logger, what: string, fn: () => Promise<T>): Promise<T> {
  const began = performance.now();
  const slow = setTimeout(() => log.warn({ pass: what, ms: Math.round(performance.now() - began) }, 'a webhook delivery pass is taking long'), 10_000);
  slow.unref();
  try {
    return await fn();
  } finally {
    clearTimeout(slow);
  }
}

interface Claimed {
  id: string;
  endpointId: string;
  eventId: string;
  attempts: number;
  shard: number;
  claimedUntil: Date;
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
  /** The shard's epoch the claim was made under: the send and its outcome are fenced by it. */
  epoch: number;
  /** performance.now() at the claim. */
  claimedAt: number;
}

const snakeCase = (row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]));

export class WebhookDelivery {
  readonly #o: WebhookDeliveryOptions;
  readonly #random: () => number;
  /** HTTP attempts in flight per endpoint. */
  readonly #busy = new Map<string, number>();
  /** Claimed messages waiting for a free slot of their endpoint, oldest due first. */
  readonly #queued = new Map<string, Claimed[]>();
  #queuedTotal = 0;
  /** Endpoints that had a free slot but found this node's `maxInFlight` taken, in the order they asked. */
  readonly #waiting = new Set<string>();
  /** Endpoints (and their shard) whose last claim took all it was allowed: there may be more due. */
  readonly #more = new Map<string, number>();
  /** The last claim stopped at the node's limit: the shards it walked may have more due. */
  #roomFull = false;
  /** Sends not yet recorded (tests wait for them). */
  readonly #sends = new Set<Promise<void>>();
  /** HTTP attempts in flight in this node. */
  #http = 0;
  /** Attempts started (claimed messages that left the queue), for `tick`. */
  #started = 0;
  readonly #recorder = new Batcher<Outcome>((batch) => this.#recordBatch(batch), { concurrency: 1, maxItems: 128, lingerMs: OUTCOME_LINGER_MS });
  #timer: NodeJS.Timeout | null = null;
  #unlisten: (() => void) | null = null;
  /** Fan-out and claims run as two series of passes: a fan-out never waits behind a claim, nor a claim behind a fan-out. */
  readonly #fanOuts: Passes;
  readonly #claims: Passes;
  /** One vetted agent per endpoint, so its connections are kept alive between attempts. */
  readonly #agents = new Map<string, { agent: Agent; url: string; lastUsed: number }>();
  /** Owned shards where something may have become sendable since the last claim. */
  readonly #dirty = new Set<number>();
  #dirtyAll = false;
  #stopped = false;

  constructor(opts: WebhookDeliveryOptions) {
    this.#o = opts;
    this.#random = opts.random ?? Math.random;
    const failed = (err: unknown) => this.#o.log.warn({ err }, 'webhook delivery pass failed');
    this.#fanOuts = new Passes(
      () =>
        timed(this.#o.log, 'fanOut', async () => {
          while ((await this.fanOut()) === FANOUT_BATCH && !this.#stopped);
        }),
      failed,
      FANOUT_INTERVAL_MS,
    );
    this.#claims = new Passes(() => timed(this.#o.log, 'claim', () => this.#claimAndSend()), failed);
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
      if (a.lastUsed < cutoff && !this.#busy.has(id) && !this.#queued.has(id)) {
        this.#agents.delete(id);
        void closeAgent(a.agent);
      }
    }
  }

  /** Stops claiming; releases the claims of messages not yet started; waits (up to `graceMs`) for sends in flight to record their outcome. */
  async stop(graceMs = 2000): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#unlisten?.();
    this.#unlisten = null;
    await Promise.all([this.#fanOuts.idle(), this.#claims.idle()]);
    const waiting = [...this.#queued.values()].flat();
    this.#queued.clear();
    this.#waiting.clear();
    this.#queuedTotal = 0;
    await this.#release(waiting);
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
   * Runs a pass soon. `fanOut`: events were committed; `claim`: something may have become sendable
   * on these shards (a wake-up, an acquired shard); `both`, with 'all': the poll.
   */
  kick(what: 'fanOut' | 'claim' | 'both', shards: readonly number[] | 'all' = []): void {
    if (this.#stopped) return;
    if (what !== 'claim') this.#fanOuts.kick();
    if (what === 'fanOut') return;
    if (shards === 'all') this.#dirtyAll = true;
    else for (const s of shards) this.#dirty.add(s);
    this.#claims.kick();
  }

  /**
   * For tests on an injected clock: fans out every event, then sends everything due and waits for the
   * outcomes, until nothing is due. Returns the number of attempts started meanwhile.
   */
  async tick(): Promise<number> {
    const before = this.#started;
    for (;;) {
      await this.#fanOuts.run(async () => {
        while ((await this.fanOut()) > 0);
      });
      const n = await this.#claims.run(() => {
        this.#dirtyAll = true;
        return this.#claimAndSend();
      });
      while (this.#sends.size) await Promise.allSettled([...this.#sends]);
      await this.#claims.idle();
      if (n === 0 && this.#sends.size === 0 && this.#queuedTotal === 0) return this.#started - before;
    }
  }

  /** Fans out one batch of undispatched events; returns how many events it read. */
  async fanOut(): Promise<number> {
    const { sql } = this.#o;
    const rows = await sql<
      { id: string; orgId: string; type: string; background: boolean; endpointId: string | null; events: string[] | null; status: 'ACTIVE' | 'DISABLED' | null; plan: PlanName | null }[]
    >`select ev.id, ev.org_id, ev.type, ev.background, e.id as endpoint_id, e.events, e.status, o.plan
      from (select id, org_id, type, background from outbox where dispatched_at is null order by id limit ${FANOUT_BATCH}) ev
      left join webhook_endpoints e on e.org_id = ev.org_id
      left join organizations o on o.id = e.org_id`;
    if (!rows.length) return 0;
    const now = this.#o.clock.now();
    const eventIds = new Set<string>();
    const messages = { id: [] as string[], endpointId: [] as string[], orgId: [] as string[], eventId: [] as string[], shard: [] as number[] };
    const skipped: Record<string, unknown>[] = [];
    for (const r of rows) {
      eventIds.add(r.id);
      if (r.endpointId === null || r.type === 'webhook.test') continue;
      if (!r.events!.includes('*') && !r.events!.includes(r.type)) continue;
      if (!r.background && !planHas(r.plan!, 'webhooks')) continue;
      if (r.status === 'ACTIVE') {
        messages.id.push(newId('whm', now));
        messages.endpointId.push(r.endpointId);
        messages.orgId.push(r.orgId);
        messages.eventId.push(r.id);
        messages.shard.push(shardOf(webhookActor(r.endpointId)));
      } else {
        skipped.push(snakeCase(attemptRow({ endpointId: r.endpointId, orgId: r.orgId, messageId: null, eventId: r.id, eventType: r.type, attempt: 0, trigger: 'EVENT', at: now, result: 'SKIPPED' })));
      }
    }
    const at = iso(now);
    // Only the events still undispatched when the update reaches them: a node fanning out the same
    // events at the same time waits here for the other's commit, then writes nothing for them.
    // It commits without waiting for the WAL flush: the events themselves are durable, and a fan-out
    // lost to a crash of the database is made again from them (the same event ids; a receiver may get
    // an event twice, as at-least-once allows). Whatever reads its messages commits after it, so an
    // outcome that was flushed was flushed with the fan-out before it.
    const [written] = await sql<{ shards: number[] }[]>`
      with done as (
        update outbox set dispatched_at = ${at} where id = any(${[...eventIds]}::text[]) and dispatched_at is null returning id
      ), messages as (
        insert into webhook_messages (id, endpoint_id, org_id, event_id, shard, status, attempts, next_attempt_at, created_at, updated_at)
        select m.id, m.endpoint_id, m.org_id, m.event_id, m.shard, 'PENDING', 0, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
        from unnest(${messages.id}::text[], ${messages.endpointId}::text[], ${messages.orgId}::text[], ${messages.eventId}::text[], ${messages.shard}::int[])
          as m(id, endpoint_id, org_id, event_id, shard)
        where m.event_id in (select id from done)
        on conflict (endpoint_id, event_id) do nothing
        returning shard
      ), skipped as (
        insert into webhook_attempts select a.* from jsonb_populate_recordset(null::webhook_attempts, ${sql.json(skipped as never)}::jsonb) a
        where a.event_id in (select id from done)
      )
      select coalesce(array_agg(distinct shard), '{}') as shards, set_config('synchronous_commit', 'off', true) from messages`;
    if (written!.shards.length) this.#wake(written!.shards);
    return eventIds.size;
  }

  #wake(shards: number[]): void {
    const owned = this.#o.cluster.owned();
    const elsewhere = shards.filter((s) => !owned.has(s));
    const here = shards.filter((s) => owned.has(s));
    if (here.length) this.kick('claim', here);
    if (elsewhere.length) this.#o.bus.publish(WAKE_CHANNEL, { shards: elsewhere }).catch(() => undefined);
  }

  /** A shard just acquired: whatever a former owner claimed and never recorded is due again now. */
  async #releaseClaims(shard: number): Promise<void> {
    await this.#o.sql`update webhook_messages set claimed_until = null
      where shard = ${shard} and status = 'PENDING' and claimed_until is not null`;
  }

  /** Best effort: gives back claims this node took and will not send (a claim of someone else's since is left alone). */
  async #release(ms: Claimed[]): Promise<void> {
    if (!ms.length) return;
    await this.#o.sql`update webhook_messages m set claimed_until = null
      from unnest(${ms.map((m) => m.id)}::text[], ${ms.map((m) => iso(m.claimedUntil.getTime()))}::timestamptz[]) as v(id, claimed_until)
      where m.id = v.id and m.status = 'PENDING' and m.claimed_until = v.claimed_until`.catch((err) =>
      this.#o.log.debug({ err, count: ms.length }, 'webhook claims not released; they lapse on their own'),
    );
  }

  /** What this node holds for an endpoint: sends in flight and claimed messages waiting. */
  #held(endpointId: string): number {
    return (this.#busy.get(endpointId) ?? 0) + (this.#queued.get(endpointId)?.length ?? 0);
  }

  /**
   * Claims what is due on the dirty owned shards and starts sending it; returns how many it claimed.
   * Each endpoint gets at most twice its concurrency held in this node (in flight and waiting), the
   * node at most twice `maxInFlight`.
   */
  async #claimAndSend(): Promise<number> {
    if (this.#stopped) return 0;
    const owned = this.#o.cluster.owned();
    this.#dropStale(owned);
    const room = 2 * this.#o.maxInFlight - this.#http - this.#queuedTotal;
    if (!owned.size || room <= 0) return 0;
    // Only the shards where something may have become sendable (the poll looks at all of them).
    const scan = this.#dirtyAll ? [...owned.keys()] : [...this.#dirty].filter((s) => owned.has(s));
    this.#dirtyAll = false;
    this.#dirty.clear();
    this.#roomFull = false;
    if (!scan.length) return 0;
    const cap = 2 * this.#o.concurrency;
    const heldIds = [...new Set([...this.#busy.keys(), ...this.#queued.keys()])];
    const heldCounts = heldIds.map((id) => this.#held(id));
    const now = iso(this.#o.clock.now());
    const claimedUntil = iso(this.#o.clock.now() + CLAIM_LEASE_MS);
    // One statement, fenced: only shards whose epoch is still ours, each row held `for share` until
    // the claim commits (a takeover's epoch bump, and its release of claims, wait for it). A claim
    // only keeps this node's own passes off the message, so losing one to a crash loses nothing:
    // it commits without waiting for the WAL flush.
    const claimed = await this.#o.sql<Omit<Claimed, 'epoch' | 'claimedAt'>[]>`
      with fence as (
        select s.id as shard, set_config('synchronous_commit', 'off', true)
        from shards s join unnest(${scan}::int[], ${scan.map((s) => owned.get(s)!)}::bigint[]) as o(shard, epoch) on o.shard = s.id
        where s.epoch = o.epoch
        for share of s
      ), due as (
        select e.endpoint_id, d.id, d.next_attempt_at, coalesce(b.n, 0) as held from fence f
        -- the endpoints of this shard that have pending messages, one index probe each
        cross join lateral (
          with recursive eps(endpoint_id) as (
            (select endpoint_id from webhook_messages where status = 'PENDING' and shard = f.shard order by endpoint_id limit 1)
            union all
            select (select m.endpoint_id from webhook_messages m
                    where m.status = 'PENDING' and m.shard = f.shard and m.endpoint_id > eps.endpoint_id order by m.endpoint_id limit 1)
            from eps where eps.endpoint_id is not null
          )
          select endpoint_id from eps where endpoint_id is not null
        ) e
        left join unnest(${heldIds}::text[], ${heldCounts}::int[]) as b(endpoint_id, n) on b.endpoint_id = e.endpoint_id
        -- and of each, the oldest due messages not claimed (a constant limit, in the index's order, so the
        -- planner's estimate stays small; what the endpoint may still take is applied below)
        cross join lateral (
          select m.id, m.next_attempt_at from webhook_messages m
          where m.shard = f.shard and m.endpoint_id = e.endpoint_id and m.status = 'PENDING' and m.next_attempt_at <= ${now}
            and (m.claimed_until is null or m.claimed_until <= ${now})
          order by m.next_attempt_at
          limit ${cap}
        ) d
        where coalesce(b.n, 0) < ${cap}
      ), pick as (
        select id from (select id, next_attempt_at, held, row_number() over (partition by endpoint_id order by next_attempt_at, id) as rn from due) r
        where rn <= ${cap} - held
        order by next_attempt_at, id limit ${room}
      ), claimed as (
        update webhook_messages m set claimed_until = ${claimedUntil}
        where m.id = any(array(select id from pick)) and m.status = 'PENDING'
        returning m.id, m.endpoint_id, m.event_id, m.attempts, m.shard, m.next_attempt_at, m.claimed_until
      )
      select c.id, c.endpoint_id, c.event_id, c.attempts, c.shard, c.claimed_until, e.url, e.status as endpoint_status, e.failing_since,
        e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
        o.org_id, o.type, o.data, o.created_at as event_created_at
      from claimed c join webhook_endpoints e on e.id = c.endpoint_id join outbox o on o.id = c.event_id
      order by c.next_attempt_at, c.id`;
    const at = performance.now();
    const taken = new Map<string, { n: number; shard: number }>();
    for (const row of claimed) {
      const m: Claimed = { ...row, epoch: owned.get(row.shard)!, claimedAt: at };
      const q = this.#queued.get(m.endpointId);
      if (q) q.push(m);
      else this.#queued.set(m.endpointId, [m]);
      this.#queuedTotal++;
      const t = taken.get(m.endpointId);
      if (t) t.n++;
      else taken.set(m.endpointId, { n: 1, shard: m.shard });
    }
    // An endpoint that took all it was allowed may have more due; one that took less has nothing more
    // (one that was allowed nothing is as it was).
    const scanned = new Set(scan);
    const heldBefore = new Map(heldIds.map((id, i) => [id, heldCounts[i]!]));
    for (const [id, shard] of this.#more) if (scanned.has(shard) && !taken.has(id) && (heldBefore.get(id) ?? 0) < cap) this.#more.delete(id);
    for (const [id, { n, shard }] of taken) {
      if (n >= cap - (heldBefore.get(id) ?? 0)) this.#more.set(id, shard);
      else this.#more.delete(id);
    }
    // took all the node could: there may be more on these shards
    if (claimed.length >= room) {
      this.#roomFull = true;
      for (const s of scan) this.#dirty.add(s);
    }
    for (const id of taken.keys()) this.#startSends(id);
    return claimed.length;
  }

  /** Forgets waiting messages whose shard this node no longer holds at the epoch of their claim: their new owner sends them. */
  #dropStale(owned: ReadonlyMap<number, number>): void {
    for (const [id, q] of this.#queued) {
      const keep = q.filter((m) => owned.get(m.shard) === m.epoch);
      if (keep.length === q.length) continue;
      this.#queuedTotal -= q.length - keep.length;
      if (keep.length) this.#queued.set(id, keep);
      else this.#queued.delete(id);
    }
  }

  /** Starts the endpoint's waiting messages while it has free slots and the node has room. */
  #startSends(endpointId: string): void {
    const q = this.#queued.get(endpointId);
    if (!q) return;
    const owned = this.#o.cluster.owned();
    const late: Claimed[] = [];
    while (q.length && (this.#busy.get(endpointId) ?? 0) < this.#o.concurrency) {
      if (this.#http >= this.#o.maxInFlight) {
        this.#waiting.add(endpointId);
        break;
      }
      const m = q.shift()!;
      this.#queuedTotal--;
      if (owned.get(m.shard) !== m.epoch) continue; // the shard moved on: its new owner sends it
      if (performance.now() - m.claimedAt > CLAIM_SEND_BY_MS) {
        late.push(m);
        continue;
      }
      this.#busy.set(endpointId, (this.#busy.get(endpointId) ?? 0) + 1);
      this.#http++;
      this.#started++;
      const p: Promise<void> = this.#send(m, () => this.#answered(m)).finally(() => this.#sends.delete(p));
      this.#sends.add(p);
    }
    if (!q.length) this.#queued.delete(endpointId);
    if (late.length) {
      this.#o.log.warn({ endpointId, count: late.length }, 'claimed webhook messages waited too long in this node; their claims are released and they are claimed again');
      void this.#release(late).then(() => this.kick('claim', [...new Set(late.map((m) => m.shard))]));
    }
  }

  /** An HTTP attempt is over: its slot goes to the endpoint's next waiting message, or to an endpoint waiting for the node's room. */
  #answered(m: Claimed): void {
    const left = (this.#busy.get(m.endpointId) ?? 1) - 1;
    if (left > 0) this.#busy.set(m.endpointId, left);
    else this.#busy.delete(m.endpointId);
    this.#http--;
    if (this.#stopped) return;
    this.#startSends(m.endpointId);
    for (const id of this.#waiting) {
      if (this.#http >= this.#o.maxInFlight) break;
      this.#waiting.delete(id);
      this.#startSends(id);
    }
    // claim more before the endpoint runs dry: when half of what it may hold is left
    if (this.#more.has(m.endpointId) && this.#held(m.endpointId) <= this.#o.concurrency) this.kick('claim', [m.shard]);
    else if (this.#roomFull && this.#http + this.#queuedTotal <= this.#o.maxInFlight) this.kick('claim');
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
        agent: this.#agentFor(m.endpointId, m.url),
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

  /**
   * Records a batch of outcomes in one statement: the shards' epochs are checked first, each shard's
   * row held `for share` until the statement commits (outcomes of shards this node no longer holds
   * at the claim's epoch are dropped: their new owner sends again), then the log rows and the
   * messages' new states. Then the endpoint actors hear what changes them.
   */
  async #recordBatch(batch: Outcome[]): Promise<void> {
    const { sql } = this.#o;
    const now = this.#o.clock.now();
    const rows = batch.map((o) => {
      const attempts = o.m.attempts + 1;
      const gone = o.result.status === 410;
      const delay = o.result.ok || gone ? null : retryDelay(attempts, this.#random, o.result.retryAfterSeconds);
      const next = delay === null ? null : now + delay;
      return { o, attempts, gone, next, status: o.result.ok ? 'SUCCEEDED' : next === null ? 'FAILED' : 'PENDING' };
    });
    const log = rows.map((r) =>
      snakeCase(
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
      ),
    );
    const shards = [...new Set(rows.map((r) => r.o.m.shard))];
    const kept = await sql<{ id: string }[]>`
      with fence as (
        select id, epoch from shards where id = any(${shards}::int[]) for share
      ), mine as (
        select v.* from unnest(${rows.map((r) => r.o.m.id)}::text[], ${rows.map((r) => r.o.m.shard)}::int[], ${rows.map((r) => r.o.m.epoch)}::bigint[],
            ${rows.map((r) => r.attempts)}::int[], ${rows.map((r) => r.status)}::text[], ${rows.map((r) => (r.next === null ? null : iso(r.next)))}::timestamptz[])
          as v(id, shard, epoch, attempts, status, next)
        join fence f on f.id = v.shard and f.epoch = v.epoch
      ), logged as (
        insert into webhook_attempts select a.* from jsonb_populate_recordset(null::webhook_attempts, ${sql.json(log as never)}::jsonb) a
        where a.message_id in (select id from mine)
      ), updated as (
        update webhook_messages m set attempts = mine.attempts, status = mine.status, claimed_until = null, updated_at = ${iso(now)},
            next_attempt_at = coalesce(mine.next, m.next_attempt_at)
        from mine where m.id = any(array(select id from mine)) and m.id = mine.id and m.status = 'PENDING'
      )
      select id from mine`;
    const recordedIds = new Set(kept.map((k) => k.id));
    if (recordedIds.size < rows.length) {
      this.#o.log.debug({ dropped: rows.length - recordedIds.size }, 'webhook outcomes not recorded: their shards moved on (the new owners send again)');
    }
    for (const r of rows) {
      if (!recordedIds.has(r.o.m.id)) continue;
      const outcome = r.o.result.ok ? 'succeeded' : r.gone ? 'gone' : r.status === 'PENDING' ? 'retry' : 'failed';
      // a success at debug (one a second per event would drown the rest), anything else at info
      const line = { endpointId: r.o.m.endpointId, messageId: r.o.m.id, eventId: r.o.m.eventId, attempt: r.attempts, outcome, statusCode: r.o.result.status ?? null, nextAttemptAt: r.next === null ? null : iso(r.next) };
      if (outcome === 'succeeded') this.#o.log.debug(line, 'webhook delivery');
      else this.#o.log.info({ ...line, error: r.o.result.error?.kind ?? null, ms: r.o.result.durationMs }, 'webhook delivery');
      // the lag of a message's first attempt: from its event's commit to the attempt's start
      this.#o.metrics?.delivery(outcome, r.attempts === 1 ? (r.o.startedAt - r.o.m.eventCreatedAt.getTime()) / 1000 : undefined);
    }
    // Tell each endpoint's actor only what changes its state (its row says whether it is failing).
    const told = new Set<string>();
    for (const r of rows) {
      if (!recordedIds.has(r.o.m.id)) continue;
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
    // these messages may be due again (a retry) or their shards may have room: nothing to do here, the
    // poll and the next wake-ups find them
  }

  #fenced<T>(shard: number, epoch: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return transaction(this.#o.sql, async (tx) => {
      await assertEpoch(tx, shard, epoch);
      return fn(tx);
    });
  }
}
