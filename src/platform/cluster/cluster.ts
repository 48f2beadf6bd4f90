import { AppError, errorCatalog, type ErrorCode } from '../../core/errors.ts';

/** Actors are placed by shard, shards by node. Changing this needs a migration of the `shards` rows. */
export const SHARD_COUNT = 64;

/** The shard of an actor: FNV-1a (32 bit) of its id, stable across processes and releases. */
export function shardOf(actorId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < actorId.length; i++) {
    const c = actorId.charCodeAt(i);
    // UTF-16 code units, both bytes, so ids outside Latin-1 still spread
    h = Math.imul(h ^ (c & 0xff), 0x01000193);
    if (c > 0xff) h = Math.imul(h ^ (c >>> 8), 0x01000193);
  }
  return (h >>> 0) % SHARD_COUNT;
}

export interface PlacementNode {
  id: string;
  host: string;
  pid: number;
  startedAt: string;
  lastSeenMsAgo: number;
}

export interface PlacementShard {
  shard: number;
  /** The lease holder in Redis (the node messages are routed to); with no Redis, the owner recorded in Postgres. */
  owner: string | null;
  /** The fencing epoch in Postgres. */
  epoch: number;
}

export interface Placement {
  nodes: PlacementNode[];
  shards: PlacementShard[];
}

export type ActorMessage = { actorId: string; event: Record<string, unknown> };

export type ActorHandler = (msg: ActorMessage, shard: number, epoch: number) => Promise<unknown>;

export interface StopOptions {
  /** Hand shards over: emit 'releasing' and await the host before giving up each lease. Without it, 'lost' at once. */
  drain?: boolean;
}

export interface AskOptions {
  /** Deadline for finding the owner and getting its reply; default 5000. */
  timeoutMs?: number;
}

/**
 * Node registry, shard leases and the one way to reach an actor. The host (actor runtime) sets the
 * handler and listens to the shard lifecycle; everyone else only calls `send` and `ask`.
 */
export interface Cluster {
  readonly nodeId: string;
  /**
   * Registers the node and takes the shards that are free and belong to it. `handler` (the actor
   * host) is called for messages to actors on shards this node owns; its value is the ask reply.
   */
  start(handler: ActorHandler): Promise<void>;
  stop(opts?: StopOptions): Promise<void>;
  /** Shard -> epoch for every shard this node holds now (including one being handed over). */
  owned(): ReadonlyMap<number, number>;
  placement(): Promise<Placement>;
  /** After the epoch bump: the host may load and run the shard's actors with this epoch. */
  on(event: 'acquired', l: (shard: number, epoch: number) => void): void;
  /** Graceful hand-over: passivate the shard's actors; the lease is given up when every listener resolves. */
  on(event: 'releasing', l: (shard: number) => Promise<void> | void): void;
  /** The lease is (or may be) gone: stop the shard's actors at once and write nothing more. */
  on(event: 'lost', l: (shard: number) => void): void;
  /** Delivers an event; resolves once the owner has accepted it (the handler has started), not when it finishes. */
  send(actorId: string, event: Record<string, unknown>): Promise<void>;
  /** Delivers an event and resolves with the handler's value; rejects with the handler's error or ActorUnavailableError. */
  ask<T = unknown>(actorId: string, event: Record<string, unknown>, opts?: AskOptions): Promise<T>;
  /** Answers calls addressed to this node for `service`. */
  serve(service: string, handler: ServiceHandler): void;
  /**
   * Calls `service` on one node (this one: in process) and resolves with its value; rejects with the
   * handler's error, or NodeUnavailableError when the node does not answer in time. Never retried:
   * the caller decides (a node that is gone stays gone).
   */
  call<T = unknown>(nodeId: string, service: string, payload: Record<string, unknown>, opts?: AskOptions): Promise<T>;
}

export const DEFAULT_ASK_TIMEOUT_MS = 5000;

/** A service a node answers for calls addressed to it (not to an actor): e.g. `media`, the rooms whose media it hosts. */
export type ServiceHandler = (payload: Record<string, unknown>) => Promise<unknown>;

/** The node a call was addressed to did not answer (gone, not listening, or too slow). Retryable. */
export class NodeUnavailableError extends AppError {
  override name = 'NodeUnavailableError';
  constructor(nodeId: string, why: string) {
    super('service_unavailable', { message: `node ${nodeId} did not answer (${why})`, details: { nodeId, reason: why } });
  }
}

/** The services this node serves, shared by both cluster implementations. */
export class NodeServices {
  readonly #handlers = new Map<string, ServiceHandler>();

  serve(service: string, handler: ServiceHandler): void {
    this.#handlers.set(service, handler);
  }

  /** Runs the handler here; an unknown service is a bug of the caller, answered as not_found. */
  invoke(service: string, payload: Record<string, unknown>): Promise<unknown> {
    const h = this.#handlers.get(service);
    if (!h) return Promise.reject(new AppError('not_found', { message: `no service ${service} on this node` }));
    try {
      return Promise.resolve(h(payload));
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

/** No owner answered in time (shard mid-failover, owner unreachable or slow). Retryable. */
export class ActorUnavailableError extends AppError {
  override name = 'ActorUnavailableError';
  constructor(opts: { message?: string; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super('actor_unavailable', opts);
  }
}

/** The shard lifecycle listeners, shared by both implementations. */
export class ShardEvents {
  readonly #acquired: ((shard: number, epoch: number) => void)[] = [];
  readonly #releasing: ((shard: number) => Promise<void> | void)[] = [];
  readonly #lost: ((shard: number) => void)[] = [];
  readonly #onError: (event: string, shard: number, err: unknown) => void;

  constructor(onError: (event: string, shard: number, err: unknown) => void) {
    this.#onError = onError;
  }

  on(event: 'acquired' | 'releasing' | 'lost', l: (...args: never[]) => unknown): void {
    if (event === 'acquired') this.#acquired.push(l as (shard: number, epoch: number) => void);
    else if (event === 'releasing') this.#releasing.push(l as (shard: number) => Promise<void> | void);
    else if (event === 'lost') this.#lost.push(l as (shard: number) => void);
    else throw new TypeError(`unknown cluster event: ${String(event)}`);
  }

  acquired(shard: number, epoch: number): void {
    for (const l of this.#acquired) this.#guard('acquired', shard, () => l(shard, epoch));
  }

  /** Awaits every listener; one that throws is logged and does not keep the shard. */
  async releasing(shard: number): Promise<void> {
    await Promise.all(
      this.#releasing.map(async (l) => {
        try {
          await l(shard);
        } catch (err) {
          this.#onError('releasing', shard, err);
        }
      }),
    );
  }

  lost(shard: number): void {
    for (const l of this.#lost) this.#guard('lost', shard, () => l(shard));
  }

  #guard(event: string, shard: number, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#onError(event, shard, err);
    }
  }
}

/** Calls the handler so that a synchronous throw becomes a rejection, like an async handler's. */
export function invoke(h: ActorHandler, msg: ActorMessage, shard: number, epoch: number): Promise<unknown> {
  try {
    return Promise.resolve(h(msg, shard, epoch));
  } catch (err) {
    return Promise.reject(err);
  }
}

/** How an error crosses the wire: AppError codes survive, anything else becomes internal_error. */
export interface WireError {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

export function toWireError(err: unknown): WireError {
  if (err instanceof AppError) return { code: err.code, message: err.message, details: err.details };
  return { code: 'internal_error', message: errorCatalog.internal_error.message, details: {} };
}

export function fromWireError(e: WireError): AppError {
  const code = (Object.hasOwn(errorCatalog, e.code) ? e.code : 'internal_error') as ErrorCode;
  if (code === 'actor_unavailable') return new ActorUnavailableError({ message: e.message, details: e.details });
  return new AppError(code, { message: e.message, details: e.details ?? {} });
}
