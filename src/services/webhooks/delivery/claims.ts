import { iso, type Clock } from '../../../core/clock.ts';
import type { Cluster } from '../../../platform/cluster/cluster.ts';
import type { Sql } from '../../../platform/db/index.ts';
import type { Logger } from '../../../platform/logger.ts';
import { DELIVERY_TIMEOUT_MS } from '../sender.ts';
import type { Slots } from './slots.ts';

/** How long a claimed message is left alone by this node's own polls; a new owner releases claims at once. */
export const CLAIM_LEASE_MS = 60_000;
/**
 * A claimed message still waiting in this node this long after its claim is not sent: its attempt
 * (up to the 10 s deadline) could outlast the claim. Its claim is released and it is claimed again.
 */
export const CLAIM_SEND_BY_MS = CLAIM_LEASE_MS - DELIVERY_TIMEOUT_MS - 10_000;

export interface Claimed {
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

export interface ClaimsOptions {
  sql: Sql;
  clock: Clock;
  cluster: Cluster;
  log: Logger;
  /** Sends in flight at once per endpoint. */
  concurrency: number;
  /** Sends in flight at once in this node. */
  maxInFlight: number;
  /** Where claimed messages wait for their endpoint's slots. */
  slots: Slots<Claimed>;
}

/**
 * Claims of due messages on the shards this node owns, and what the claims so far say about where more
 * may be due: the shards marked since the last claim, the endpoints whose last claim took all it was
 * allowed, whether the last claim stopped at the node's limit.
 */
export class Claims {
  readonly #o: ClaimsOptions;
  /** Endpoints (and their shard) whose last claim took all it was allowed: there may be more due. */
  readonly #more = new Map<string, number>();
  /** The last claim stopped at the node's limit: the shards it walked may have more due. */
  #roomFull = false;
  /** Owned shards where something may have become sendable since the last claim. */
  readonly #dirty = new Set<number>();
  #dirtyAll = false;

  constructor(o: ClaimsOptions) {
    this.#o = o;
  }

  /** Something may have become sendable on these shards ('all': the poll looks at every owned one). */
  mark(shards: readonly number[] | 'all'): void {
    if (shards === 'all') this.#dirtyAll = true;
    else for (const s of shards) this.#dirty.add(s);
  }

  /**
   * After a slot of `m`'s endpoint freed: the shards to claim on now ([] for the marked ones only), or
   * null when there is no need to claim yet.
   */
  after(m: Claimed): number[] | null {
    const { slots, concurrency, maxInFlight } = this.#o;
    // claim more before the endpoint runs dry: when half of what it may hold is left
    if (this.#more.has(m.endpointId) && slots.held(m.endpointId) <= concurrency) return [m.shard];
    if (this.#roomFull && slots.inFlight + slots.queued <= maxInFlight) return [];
    return null;
  }

  /**
   * Claims what is due on the dirty owned shards and starts sending it; returns how many it claimed.
   * Each endpoint gets at most twice its concurrency held in this node (in flight and waiting), the
   * node at most twice `maxInFlight`.
   */
  async claim(): Promise<number> {
    const { slots } = this.#o;
    const owned = this.#o.cluster.owned();
    slots.dropStale(owned);
    const room = 2 * this.#o.maxInFlight - slots.inFlight - slots.queued;
    if (!owned.size || room <= 0) return 0;
    // Only the shards where something may have become sendable (the poll looks at all of them).
    const scan = this.#dirtyAll ? [...owned.keys()] : [...this.#dirty].filter((s) => owned.has(s));
    this.#dirtyAll = false;
    this.#dirty.clear();
    this.#roomFull = false;
    if (!scan.length) return 0;
    const cap = 2 * this.#o.concurrency;
    const heldIds = slots.heldIds();
    const heldCounts = heldIds.map((id) => slots.held(id));
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
    const ms = claimed.map((row): Claimed => ({ ...row, epoch: owned.get(row.shard)!, claimedAt: at }));
    const taken = new Map<string, { n: number; shard: number }>();
    for (const m of ms) {
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
    slots.add(ms);
    return claimed.length;
  }

  /** A shard just acquired: whatever a former owner claimed and never recorded is due again now. */
  async releaseShard(shard: number): Promise<void> {
    await this.#o.sql`update webhook_messages set claimed_until = null
      where shard = ${shard} and status = 'PENDING' and claimed_until is not null`;
  }

  /** Best effort: gives back claims this node took and will not send (a claim of someone else's since is left alone). */
  async release(ms: Claimed[]): Promise<void> {
    if (!ms.length) return;
    await this.#o.sql`update webhook_messages m set claimed_until = null
      from unnest(${ms.map((m) => m.id)}::text[], ${ms.map((m) => iso(m.claimedUntil.getTime()))}::timestamptz[]) as v(id, claimed_until)
      where m.id = v.id and m.status = 'PENDING' and m.claimed_until = v.claimed_until`.catch((err) =>
      this.#o.log.debug({ err, count: ms.length }, 'webhook claims not released; they lapse on their own'),
    );
  }
}
