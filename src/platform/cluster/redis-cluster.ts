import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Sql } from '../db/index.ts';
import type { Logger } from '../logger.ts';
import {
  DEFAULT_ASK_TIMEOUT_MS,
  SHARD_COUNT,
  ShardEvents,
  NodeServices,
  type ActorHandler,
  type AskOptions,
  type ServiceHandler,
  type Cluster,
  type Placement,
  type StopOptions,
} from './cluster.ts';
import { sleep, within } from './deadline.ts';
import { acquireEpoch, releaseEpoch } from './fencing.ts';
import { newNodeId } from './local-cluster.ts';
import { clusterKeys, desiredOwners, readPlacement } from './placement.ts';
import { RedisRouter, type Inbound, type InboundCall, type Reply } from './redis-router.ts';
import { clusterCommands, type ClusterCommands } from './redis-scripts.ts';

/** Production timings; tests of the failover bound use these. */
export const CLUSTER_DEFAULTS = {
  /** Heartbeat and lease renewal period. */
  tickMs: 1000,
  /** A node not heard from for this long is gone. */
  nodeTtlMs: 3000,
  /** PX of a shard lease. */
  leaseMs: 3000,
  /** A lease not renewed (counted from when the renewal was sent) for this long is given up: 2/3 of leaseMs. */
  stepDownMs: 2000,
  /** A drain that takes longer than this gives the remaining shards up as lost. */
  drainTimeoutMs: 30_000,
  /** How long a resolved shard owner is trusted without asking Redis again. */
  ownerCacheMs: 500,
} as const;

type Timings = Record<keyof typeof CLUSTER_DEFAULTS, number>;

export interface RedisClusterOptions extends Partial<Timings> {
  /** Template connection: the cluster opens its own two (commands, subscriber) with the same options and closes them on stop. */
  redis: Redis;
  sql: Sql;
  prefix: string;
  nodeId?: string;
  log?: Logger;
  askTimeoutMs?: number;
}

interface Lease {
  shard: number;
  /** performance.now() until which the lease is certainly ours: renewal send time + stepDownMs. */
  validUntil: number;
  /** null while the epoch is being bumped. */
  epoch: number | null;
  releasing: boolean;
}

/**
 * Nodes heartbeat in Redis; every node computes each shard's desired owner from the live nodes
 * by rendezvous hashing; a shard is held by a Redis lease (SET NX PX, renewed by compare-and-pexpire)
 * and fenced by a Postgres epoch bumped on every acquisition. Messages to actors on other nodes go
 * over Redis pub/sub with a request id and a deadline.
 */
export class RedisCluster implements Cluster {
  readonly nodeId: string;
  readonly #t: Timings;
  readonly #askTimeoutMs: number;
  readonly #cmd: Redis & ClusterCommands;
  readonly #sub: Redis;
  readonly #sql: Sql;
  readonly #prefix: string;
  readonly #keys: ReturnType<typeof clusterKeys>;
  readonly #log: Logger;
  readonly #events: ShardEvents;
  readonly #info: string;

  #state: 'idle' | 'running' | 'leaving' | 'stopped' = 'idle';
  #handler: ActorHandler | null = null;
  readonly #leases = new Map<number, Lease>();
  /** Shards with an acquisition or a hand-over in progress. */
  readonly #busy = new Set<number>();
  #nodes: string[] = [];
  /** desiredOwners(#nodes), kept in step with it. */
  #desired: (string | null)[] = [];
  readonly #router: RedisRouter;
  readonly #services = new NodeServices();

  #timer: NodeJS.Timeout | null = null;
  #timerDue = Infinity;
  #watchdog: NodeJS.Timeout | null = null;
  #ticking = false;
  #again = false;
  #stopping: Promise<void> | null = null;

  constructor(opts: RedisClusterOptions) {
    this.nodeId = opts.nodeId ?? newNodeId();
    this.#t = {
      tickMs: opts.tickMs ?? CLUSTER_DEFAULTS.tickMs,
      nodeTtlMs: opts.nodeTtlMs ?? CLUSTER_DEFAULTS.nodeTtlMs,
      leaseMs: opts.leaseMs ?? CLUSTER_DEFAULTS.leaseMs,
      stepDownMs: opts.stepDownMs ?? Math.round(((opts.leaseMs ?? CLUSTER_DEFAULTS.leaseMs) * 2) / 3),
      drainTimeoutMs: opts.drainTimeoutMs ?? CLUSTER_DEFAULTS.drainTimeoutMs,
      ownerCacheMs: opts.ownerCacheMs ?? CLUSTER_DEFAULTS.ownerCacheMs,
    };
    if (this.#t.stepDownMs >= this.#t.leaseMs) throw new RangeError('stepDownMs must be shorter than leaseMs');
    if (this.#t.tickMs >= this.#t.stepDownMs) throw new RangeError('tickMs must be shorter than stepDownMs');
    this.#askTimeoutMs = opts.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS;
    this.#sql = opts.sql;
    this.#prefix = opts.prefix;
    this.#keys = clusterKeys(opts.prefix);
    this.#log = (opts.log ?? pino({ level: 'silent' })).child({ nodeId: this.nodeId });
    this.#events = new ShardEvents((event, shard, err) => this.#log.error({ err, event, shard }, 'shard listener failed'));
    const name = (role: string) => `${opts.prefix}cluster:${this.nodeId}:${role}`.replace(/[^\w:.-]/g, '_');
    this.#cmd = clusterCommands(opts.redis.duplicate({ connectionName: name('cmd') }));
    // A subscriber must never have a command queued behind its SUBSCRIBE: autopipelining could send the
    // ready check or CLIENT SETNAME after it on a reconnect, which Redis refuses in subscriber mode
    // (redis/ioredis#1505), and the connection would loop on errors.
    this.#sub = opts.redis.duplicate({ connectionName: name('sub'), enableAutoPipelining: false, enableReadyCheck: false });
    for (const [role, conn] of [['cmd', this.#cmd], ['sub', this.#sub]] as const) {
      conn.on('error', (err: Error) => this.#log.warn({ err: err.message, role }, 'cluster redis connection error'));
    }
    this.#router = new RedisRouter(
      {
        nodeId: this.nodeId,
        accepting: () => this.#state === 'running' || this.#state === 'leaving',
        serving: (shard) => this.#serving(shard),
        services: this.#services,
        fenced: (shard, epoch) => {
          const lease = this.#leases.get(shard);
          if (lease?.epoch === epoch) this.#drop(lease, 'a write was fenced: the epoch moved on');
        },
      },
      this.#cmd,
      this.#keys,
      this.#log,
      this.#t.ownerCacheMs,
    );
    this.#info = JSON.stringify({ host: hostname(), pid: process.pid, startedAt: new Date().toISOString() });
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  async start(handler: ActorHandler): Promise<void> {
    if (this.#state !== 'idle') throw new Error(`cluster node ${this.nodeId} was already started`);
    this.#handler = handler;
    this.#state = 'running';
    try {
      this.#sub.on('message', (channel: string, raw: string) => this.#onMessage(channel, raw));
      // listening before registering: nobody routes to this node before it can hear
      await within(this.#sub.subscribe(this.#keys.inbox(this.nodeId), this.#keys.reply(this.nodeId), this.#keys.events), this.#t.leaseMs, 'subscribe');
      await this.#heartbeat();
      this.#watchdog = setInterval(() => this.#checkLeases(), Math.min(100, this.#t.tickMs / 4));
      await Promise.all(await this.#tick());
      this.#schedule(this.#t.tickMs);
      await this.#announce({ type: 'join' });
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.#log.info({ owned: this.owned().size }, 'cluster node started');
  }

  /** Idempotent; a second call waits for the first. */
  stop(opts: StopOptions = {}): Promise<void> {
    this.#stopping ??= this.#stop(opts);
    return this.#stopping;
  }

  async #stop(opts: StopOptions): Promise<void> {
    if (this.#state === 'idle') {
      this.#state = 'stopped';
      this.#cmd.disconnect();
      this.#sub.disconnect();
      return;
    }
    try {
      if (opts.drain) await this.#drain();
      this.#state = 'stopped';
      this.#clearTimers();
      // acquisitions in flight see the state and give their lease straight back
      const until = performance.now() + this.#t.leaseMs;
      while (this.#busy.size && performance.now() < until) await sleep(10);
      const rest = [...this.#leases.values()];
      this.#leases.clear();
      for (const lease of rest) if (lease.epoch !== null) this.#events.lost(lease.shard);
      await within(this.#deregister(), this.#t.leaseMs, 'deregister').catch((err) => this.#log.warn({ err }, 'could not deregister'));
      await Promise.all(rest.map((l) => this.#giveUp(l).catch((err) => this.#log.warn({ err, shard: l.shard }, 'could not release a lease'))));
    } finally {
      this.#state = 'stopped';
      this.#clearTimers();
      this.#router.close();
      this.#cmd.disconnect();
      this.#sub.disconnect();
    }
  }

  /** Leaves the node list first, so the others plan without it, then hands every shard over. */
  async #drain(): Promise<void> {
    this.#state = 'leaving';
    await within(this.#deregister(), this.#t.leaseMs, 'deregister').catch((err) => this.#log.warn({ err }, 'could not deregister'));
    const until = performance.now() + this.#t.drainTimeoutMs;
    while ((this.#leases.size || this.#busy.size) && performance.now() < until) {
      await Promise.all(
        [...this.#leases.values()].filter((l) => l.epoch !== null && !this.#busy.has(l.shard)).map((l) => this.#release(l)),
      );
      if (this.#leases.size || this.#busy.size) await sleep(20);
    }
    if (this.#leases.size) this.#log.warn({ shards: [...this.#leases.keys()] }, 'drain timed out; giving the remaining shards up');
  }

  owned(): ReadonlyMap<number, number> {
    const now = performance.now();
    const out = new Map<number, number>();
    for (const l of this.#leases.values()) if (l.epoch !== null && now < l.validUntil) out.set(l.shard, l.epoch);
    return out;
  }

  placement(): Promise<Placement> {
    return readPlacement(this.#cmd, this.#sql, this.#prefix);
  }

  on(event: 'acquired', l: (shard: number, epoch: number) => void): void;
  on(event: 'releasing', l: (shard: number) => Promise<void> | void): void;
  on(event: 'lost', l: (shard: number) => void): void;
  on(event: 'acquired' | 'releasing' | 'lost', l: (...args: never[]) => unknown): void {
    this.#events.on(event, l);
  }

  // ---- node registry and leases -------------------------------------------------------------------

  async #heartbeat(): Promise<void> {
    const register = this.#state === 'running' ? '1' : '0';
    const [nowRaw, flat] = await within(
      this.#cmd.aulaHeartbeat(this.#keys.nodes, this.#keys.info, this.nodeId, this.#t.nodeTtlMs, this.#info, register),
      this.#t.leaseMs,
      'heartbeat',
    );
    const now = Number(nowRaw);
    const nodes: string[] = [];
    let nextExpiry = Infinity;
    for (let i = 0; i < flat.length; i += 2) {
      const id = flat[i]!;
      nodes.push(id);
      if (id !== this.nodeId) nextExpiry = Math.min(nextExpiry, Number(flat[i + 1]));
    }
    nodes.sort();
    if (nodes.join('\n') !== this.#nodes.join('\n')) {
      this.#nodes = nodes;
      this.#desired = desiredOwners(nodes);
    }
    // A dead node's registration runs out between ticks: look again just after, not a tick later.
    if (nextExpiry - now < this.#t.tickMs) this.#schedule(Math.max(0, nextExpiry - now) + 5);
  }

  async #renew(): Promise<void> {
    const leases = [...this.#leases.values()];
    if (!leases.length) return;
    const sent = performance.now();
    const res = await within(
      this.#cmd.aulaRenew(leases.length, ...leases.map((l) => this.#keys.lease(l.shard)), this.nodeId, this.#t.leaseMs),
      this.#t.leaseMs,
      'renew',
    );
    leases.forEach((lease, i) => {
      if (this.#leases.get(lease.shard) !== lease) return;
      if (res[i] === 1) lease.validUntil = Math.max(lease.validUntil, sent + this.#t.stepDownMs);
      else this.#drop(lease, 'the lease is held by someone else or expired');
    });
  }

  /**
   * Steps down from every lease whose last successful renewal was sent more than stepDownMs ago. The
   * lease in Redis lives leaseMs from when that renewal arrived, which is later than when it was sent,
   * so the host hears 'lost' at least leaseMs - stepDownMs before anyone else can take the shard.
   */
  #checkLeases(): void {
    const now = performance.now();
    for (const lease of [...this.#leases.values()]) {
      if (now >= lease.validUntil) this.#drop(lease, 'lease renewal overdue');
    }
  }

  #drop(lease: Lease, reason: string): void {
    if (this.#leases.get(lease.shard) !== lease) return;
    this.#leases.delete(lease.shard);
    this.#router.forget(lease.shard);
    if (lease.epoch === null) return;
    this.#log.warn({ shard: lease.shard, epoch: lease.epoch, reason }, 'shard lost');
    this.#events.lost(lease.shard);
  }

  /** One round: heartbeat, renew, and start acquisitions and hand-overs. Returns those tasks. */
  async #tick(): Promise<Promise<void>[]> {
    if (this.#ticking) {
      this.#again = true;
      return [];
    }
    this.#ticking = true;
    const tasks: Promise<void>[] = [];
    try {
      const [hb, renew] = await Promise.allSettled([this.#heartbeat(), this.#renew()]);
      if (renew.status === 'rejected') this.#log.warn({ err: String(renew.reason) }, 'lease renewal failed');
      if (hb.status === 'rejected') {
        this.#log.warn({ err: String(hb.reason) }, 'heartbeat failed');
        return tasks;
      }
      if (this.#state !== 'running' && this.#state !== 'leaving') return tasks;
      for (let shard = 0; shard < SHARD_COUNT; shard++) {
        if (this.#busy.has(shard)) continue;
        const mine = this.#state === 'running' && this.#desired[shard] === this.nodeId;
        const lease = this.#leases.get(shard);
        if (lease && !mine && lease.epoch !== null) tasks.push(this.#release(lease));
        else if (!lease && mine) tasks.push(this.#acquire(shard));
      }
    } finally {
      this.#ticking = false;
      if (this.#again) {
        this.#again = false;
        this.#schedule(0);
      }
    }
    return tasks;
  }

  #desiredOwner(shard: number): string | null {
    return this.#desired[shard] ?? null;
  }

  #schedule(ms: number): void {
    if (this.#state === 'stopped' || this.#state === 'idle') return;
    const due = performance.now() + ms;
    if (this.#timer && this.#timerDue <= due) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerDue = due;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#timerDue = Infinity;
      this.#schedule(this.#t.tickMs);
      this.#tick().catch((err) => this.#log.error({ err }, 'cluster tick failed'));
    }, ms);
  }

  #clearTimers(): void {
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#watchdog) clearInterval(this.#watchdog);
    this.#timer = null;
    this.#timerDue = Infinity;
    this.#watchdog = null;
  }

  async #acquire(shard: number): Promise<void> {
    this.#busy.add(shard);
    try {
      const sent = performance.now();
      const [taken, pttl] = await within(this.#cmd.aulaAcquire(this.#keys.lease(shard), this.nodeId, this.#t.leaseMs), this.#t.leaseMs, 'acquire');
      if (!taken) {
        // the former owner's lease runs out before the next tick: try again just after it does
        if (pttl > 0 && pttl < this.#t.tickMs) this.#schedule(pttl + 5);
        return;
      }
      const lease: Lease = { shard, validUntil: sent + this.#t.stepDownMs, epoch: null, releasing: false };
      if (this.#state !== 'running') return await this.#giveUp(lease);
      this.#leases.set(shard, lease);
      let epoch: number;
      try {
        epoch = await acquireEpoch(this.#sql, shard, this.nodeId);
      } catch (err) {
        this.#log.warn({ err, shard }, 'could not fence the shard in Postgres; giving the lease back');
        if (this.#leases.get(shard) === lease) {
          this.#leases.delete(shard);
          await this.#giveUp(lease);
        }
        return;
      }
      if (this.#leases.get(shard) !== lease || performance.now() >= lease.validUntil) {
        this.#log.warn({ shard, epoch }, 'the lease lapsed while the epoch was bumped');
        this.#drop(lease, 'lease lapsed while fencing');
        return;
      }
      lease.epoch = epoch;
      if (this.#state !== 'running') {
        this.#leases.delete(shard);
        return await this.#giveUp(lease);
      }
      this.#router.remember(shard, this.nodeId);
      this.#log.info({ shard, epoch }, 'shard acquired');
      this.#events.acquired(shard, epoch);
      // the node list may have changed while this was in flight (a join): plan again now, not a tick later
      if (this.#desiredOwner(shard) !== this.nodeId) this.#schedule(0);
    } catch (err) {
      this.#log.warn({ err: err instanceof Error ? err.message : err, shard }, 'shard acquisition failed');
    } finally {
      this.#busy.delete(shard);
    }
  }

  /** Hand-over: the host passivates first; then the lease goes and the others are told at once. */
  async #release(lease: Lease): Promise<void> {
    const { shard } = lease;
    if (this.#busy.has(shard)) return;
    this.#busy.add(shard);
    lease.releasing = true;
    try {
      await this.#events.releasing(shard);
      if (this.#leases.get(shard) !== lease) return; // lost meanwhile: 'lost' was emitted
      this.#leases.delete(shard);
      this.#router.forget(shard);
      await this.#giveUp(lease);
      this.#log.debug({ shard, epoch: lease.epoch }, 'shard handed over');
      if (this.#state === 'running' && this.#desiredOwner(shard) === this.nodeId) this.#schedule(0);
    } catch (err) {
      this.#log.warn({ err: err instanceof Error ? err.message : err, shard }, 'shard hand-over failed');
    } finally {
      this.#busy.delete(shard);
    }
  }

  /** Deletes the lease if still ours, tells the others, and records in Postgres that nobody holds the shard. */
  async #giveUp(lease: Lease): Promise<void> {
    await within(this.#cmd.aulaRelease(this.#keys.lease(lease.shard), this.nodeId), this.#t.leaseMs, 'release');
    await this.#announce({ type: 'released', shard: lease.shard });
    if (lease.epoch !== null) await releaseEpoch(this.#sql, lease.shard, this.nodeId, lease.epoch);
  }

  async #deregister(): Promise<void> {
    await this.#cmd.multi().zrem(this.#keys.nodes, this.nodeId).hdel(this.#keys.info, this.nodeId).exec();
    await this.#announce({ type: 'leave' });
  }

  async #announce(msg: Record<string, unknown>): Promise<void> {
    await this.#cmd.publish(this.#keys.events, JSON.stringify({ ...msg, from: this.nodeId })).catch(() => 0);
  }

  // ---- routing ---------------------------------------------------------------------------------

  async send(actorId: string, event: Record<string, unknown>): Promise<void> {
    await this.#router.deliver(actorId, event, false, this.#askTimeoutMs);
  }

  ask<T = unknown>(actorId: string, event: Record<string, unknown>, opts: AskOptions = {}): Promise<T> {
    return this.#router.deliver(actorId, event, true, opts.timeoutMs ?? this.#askTimeoutMs) as Promise<T>;
  }

  serve(service: string, handler: ServiceHandler): void {
    this.#services.serve(service, handler);
  }

  call<T = unknown>(nodeId: string, service: string, payload: Record<string, unknown>, opts: AskOptions = {}): Promise<T> {
    return this.#router.call(nodeId, service, payload, opts.timeoutMs ?? this.#askTimeoutMs) as Promise<T>;
  }

  /** The lease of a shard this node serves now: fenced, not being handed over, renewed in time. */
  #serving(shard: number): { handler: ActorHandler; epoch: number } | null {
    const lease = this.#leases.get(shard);
    if (!lease || lease.epoch === null || lease.releasing || !this.#handler) return null;
    if (this.#state !== 'running' && this.#state !== 'leaving') return null;
    if (performance.now() >= lease.validUntil) return null;
    return { handler: this.#handler, epoch: lease.epoch };
  }

  #onMessage(channel: string, raw: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(raw);
    } catch {
      return;
    }
    if (typeof msg !== 'object' || msg === null) return;
    if (channel === this.#keys.reply(this.nodeId)) this.#router.onReply(msg as Reply);
    else if (channel === this.#keys.inbox(this.nodeId)) this.#router.onInbound(msg as Inbound | InboundCall);
    else if (channel === this.#keys.events && (msg as { from?: string }).from !== this.nodeId) this.#schedule(0);
  }
}
