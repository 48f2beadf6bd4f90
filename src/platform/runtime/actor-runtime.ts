import type { z } from 'zod';
import { createActor, type AnyActor, type AnyStateMachine } from 'xstate';
import type { DisconnectEffect, SendEffect } from '../../core/actor-effects.ts';
import { iso, type Clock } from '../../core/clock.ts';
import { ActorState, readActorState, writeState, type StateWrite } from './actor-state.ts';
import type { ActorMessage } from '../cluster/cluster.ts';
import { assertEpoch } from '../cluster/fencing.ts';
import { ActorUnavailableError } from '../cluster/cluster.ts';
import type { Db, Sql } from '../db/index.ts';
import { transaction } from '../db/tx.ts';
import { retryableDbError } from '../db/failures.ts';
import { AppError, validationError } from '../../core/errors.ts';
import type { Logger } from '../logger.ts';
import type { EventType, Outbox } from '../outbox.ts';

export type RoomEffect = SendEffect | DisconnectEffect;

/** The effects every actor shares, carried out by the runtime itself; anything else is a definition's own. */
type SharedEffectType = 'outbox' | 'timer.set' | 'timer.cancel' | 'send' | 'disconnect' | 'reply';

/**
 * How the runtime hosts one kind of actor, typed by its context (`Context`: what its snapshot holds), the
 * effects its machine emits (`Effect`; the runtime carries out the shared ones and hands the rest to
 * `effect`), and its input. Written with `defineActor`, which checks these types and erases them for the
 * runtime's table of definitions.
 */
export interface ActorDefinition<Context = Record<string, unknown>, Effect extends { type: string } = { type: string }, Input = Record<string, unknown>> {
  /** The actor ids' prefix: `<name>:<entityId>`. */
  name: string;
  version: number;
  machine: AnyStateMachine;
  events: z.ZodType;
  /** Input for a fresh actor from the database, or null when the entity does not exist. */
  input(db: Db, entityId: string): Promise<Input | null>;
  /** The organization whose outbox receives this actor's events. */
  orgOf(context: Context): string;
  /** Sent to a fresh actor before anything else. */
  init?: (at: number) => Record<string, unknown>;
  /**
   * Transitions after which the deltas before them must not be kept: the runtime writes the whole state
   * into the snapshot row and deletes the deltas in the transition's transaction (say, a person's erasure:
   * no earlier delta may still name them). Otherwise a transition writes its delta (actor-state.ts).
   */
  compact?(event: Record<string, unknown>, before: Context, after: Context): boolean;
  /** Writes the actor's state back to its domain row, in the snapshot's transaction. */
  project?(tx: Db, entityId: string, context: Context, at: number): Promise<void>;
  /** Carries out a definition's own effects (anything but outbox, timers, sends, disconnects and the reply) in the transition's transaction. */
  effect?(tx: Db, entityId: string, context: Context, effect: Exclude<Effect, { type: SharedEffectType }>, at: number, env: EffectEnv): Promise<void>;
  /** Events for other actors once a transition has committed (e.g. the waiting room hears the meeting ended). */
  followUps?(entityId: string, before: Context, after: Context): { actorId: string; event: Record<string, unknown> }[];
  /** Bus messages to every node once a transition has committed (e.g. drop cached copies of a row the projection changed). */
  notices?(entityId: string, before: Context, after: Context): { channel: string; message: Record<string, unknown> }[];
  /**
   * The HTTP answer to a command that carried `answerTo` (an idempotent request's key), built in the
   * transition's transaction after the projection from the actor's reply, so the change and the stored
   * answer commit together. Not called for a refusal.
   */
  answer?(tx: Db, entityId: string, context: Context, reply: Record<string, unknown>): Promise<Answer> | Answer;
}

/** An idempotent request's key, carried by the one command whose change its stored answer must commit with. */
export interface AnswerTo {
  scope: string;
  key: string;
  /** When the request reserved the key (a request whose key was taken over must not write to it). */
  reservedAt: string;
}

/** An HTTP answer as the idempotency store keeps it. */
export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  /** The body's `data`; whatever else the route's answer holds is stored with it, as JSON. */
  data?: unknown;
}

/** Stores `answer` as the answer to `to`'s key, in the transition's transaction; throws if the key is no longer that request's. */
export type StoreAnswer = (tx: Db, to: AnswerTo, answer: Answer) => Promise<void>;

function answerToOf(v: unknown): AnswerTo | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { scope, key, reservedAt } = v as Record<string, unknown>;
  return typeof scope === 'string' && typeof key === 'string' && typeof reservedAt === 'string' ? { scope, key, reservedAt } : undefined;
}

/**
 * An actor definition, checked against its machine's context, effects and input. The runtime keeps every
 * kind in one table and hands each definition only what its own machine produced (the snapshot's context,
 * the effects it emitted), so the types it checks here hold there; the one cast is that table's.
 */
export function defineActor<Context, Effect extends { type: string }, Input>(def: ActorDefinition<Context, Effect, Input>): ActorDefinition {
  return def as unknown as ActorDefinition;
}

/** What a definition's own effects may need to know about this node. */
export interface EffectEnv {
  /** The public base URL (for addresses written into emails), once the node listens. */
  baseUrl(): string | undefined;
  /** Where a definition's own effects write events, in the transition's transaction. */
  outbox: Outbox;
}

/** Where the sends and disconnects an actor emits go once its transition has committed. */
export interface EffectSink {
  deliver(actorId: string, effects: RoomEffect[]): void;
}

interface Entry {
  actor: AnyActor;
  def: ActorDefinition;
  entityId: string;
  shard: number;
  epoch: number;
  lastUsed: number;
  /** What Postgres holds of it: what its next delta is taken against. */
  state: ActorState;
}

type Effect = { type: string; [k: string]: unknown };

/**
 * Events one actor may have waiting; past it, new ones are refused with the retryable `room_busy` at
 * once instead of queueing behind a flood (each event is a database commit), so one busy room cannot
 * hold the node's memory or make everyone else's requests wait.
 */
export const MAILBOX_LIMIT = 64;

/**
 * Runs the actors of the shards this node owns. One event at a time per actor (a mailbox); after
 * each transition what changed in its snapshot (a delta, or the whole snapshot when compacting:
 * actor-state.ts), the outbox rows, the timers and the domain projection commit in one transaction
 * fenced by the shard's epoch, and only then do sends, disconnects and the reply go out. A failed
 * commit drops the in-memory actor, so memory never runs ahead of the database. An actor passivated
 * or handed over with deltas pending is compacted first.
 */
export class ActorRuntime {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #definitions = new Map<string, ActorDefinition>();
  readonly #entries = new Map<string, Entry>();
  readonly #storeAnswer: StoreAnswer | undefined;
  readonly #tails = new Map<string, Promise<unknown>>();
  readonly #depth = new Map<string, number>();
  /** Events taken into a mailbox, and events refused because it was full (for monitoring). */
  readonly counts = { events: 0, busy: 0 };
  readonly #env: EffectEnv;
  readonly #outbox: Outbox;
  readonly #sink: EffectSink;
  readonly #send: (actorId: string, event: Record<string, unknown>) => Promise<void>;
  readonly #publish: (channel: string, message: Record<string, unknown>) => Promise<void>;

  constructor(opts: {
    sql: Sql;
    clock: Clock;
    log: Logger;
    definitions: ActorDefinition[];
    env?: Omit<EffectEnv, 'outbox'>;
    /** Where the transitions' events are written (in their transaction). */
    outbox: Outbox;
    /** Where room effects go once a transition has committed (the rooms service). */
    sink: EffectSink;
    /** How follow-up events reach other actors (the cluster's `send`). */
    send: (actorId: string, event: Record<string, unknown>) => Promise<void>;
    /** How definitions' notices reach every node (the bus's `publish`). */
    publish: (channel: string, message: Record<string, unknown>) => Promise<void>;
    /** Where a command's answer to an idempotent request is stored, in the command's transaction (the idempotency store). */
    storeAnswer?: StoreAnswer;
  }) {
    this.#sql = opts.sql;
    this.#clock = opts.clock;
    this.#log = opts.log;
    this.#env = { baseUrl: opts.env?.baseUrl ?? (() => undefined), outbox: opts.outbox };
    this.#outbox = opts.outbox;
    this.#sink = opts.sink;
    this.#send = opts.send;
    this.#publish = opts.publish;
    this.#storeAnswer = opts.storeAnswer;
    for (const d of opts.definitions) this.#definitions.set(d.name, d);
  }

  /** The cluster's handler: messages for actors on shards this node owns. */
  readonly handle = (msg: ActorMessage, shard: number, epoch: number): Promise<unknown> =>
    this.#mailbox(`${epoch}:${msg.actorId}`, () => this.#process(msg.actorId, msg.event, shard, epoch));

  /** Stops every in-memory actor of a shard (lost); their state is already in Postgres. */
  dropShard(shard: number): void {
    for (const [id, e] of this.#entries) if (e.shard === shard) this.#drop(id);
  }

  /** Stops the actors of a shard being handed over, compacting those with deltas first (while its epoch is still this node's). */
  async releaseShard(shard: number): Promise<void> {
    await Promise.all([...this.#entries].filter(([, e]) => e.shard === shard).map(([id, e]) => this.#passivate(id, e)));
    this.dropShard(shard); // any loaded again meanwhile
  }

  /**
   * Drops actors unused for `idleMs`; the next message rehydrates them from Postgres. The deltas of one
   * are compacted into its snapshot row through its mailbox, so a message that arrives meanwhile loads
   * the compacted row.
   */
  passivateIdle(idleMs: number): number {
    const cutoff = performance.now() - idleMs;
    let n = 0;
    for (const [id, e] of this.#entries) {
      if (e.lastUsed < cutoff && !this.#tails.has(`${e.epoch}:${id}`)) {
        void this.#passivate(id, e);
        n++;
      }
    }
    return n;
  }

  /** Drops the actor now; writes its whole state into its snapshot row (fenced) when deltas are pending. */
  #passivate(actorId: string, entry: Entry): Promise<void> {
    this.#drop(actorId);
    if (!entry.state.pending) return Promise.resolve();
    return this.#mailbox(`${entry.epoch}:${actorId}`, () => this.#compact(actorId, entry)).catch(() => {});
  }

  /** A compaction outside a transition; when it fails the deltas stay (and load), so a warning is all. */
  async #compact(actorId: string, entry: Entry): Promise<void> {
    const w = entry.state.planCompaction();
    if (w.kind === 'none') return;
    try {
      await transaction(this.#sql, async (tx) => {
        await assertEpoch(tx, entry.shard, entry.epoch);
        await writeState(tx, this.#key(actorId, entry), w, this.#clock.now());
      });
      entry.state.committed(w);
    } catch (err) {
      this.#log.warn({ err, actorId }, 'actor not compacted when it was dropped: its deltas stay');
    }
  }

  #key(actorId: string, e: Entry) {
    return { actorId, kind: e.def.name, shard: e.shard, version: e.def.version };
  }

  /** Ids of the actors of a definition (by name) held in memory here. */
  loaded(name: string): string[] {
    return [...this.#entries.values()].filter((e) => e.def.name === name).map((e) => `${name}:${e.entityId}`);
  }

  get size(): number {
    return this.#entries.size;
  }

  stopAll(): void {
    for (const id of [...this.#entries.keys()]) this.#drop(id);
  }

  #drop(actorId: string): void {
    const e = this.#entries.get(actorId);
    if (!e) return;
    this.#entries.delete(actorId);
    e.actor.stop();
  }

  /** Events waiting or running in every mailbox of this node. */
  mailboxDepth(): number {
    let n = 0;
    for (const d of this.#depth.values()) n += d;
    return n;
  }

  /**
   * One event at a time per actor and epoch. Keyed by epoch too: work left over from an epoch this
   * node lost (say, a commit stuck when the process was frozen) can never hold up the actor once the
   * shard is acquired again, and it cannot commit anyway.
   */
  #mailbox<T>(actorId: string, fn: () => Promise<T>): Promise<T> {
    const depth = this.#depth.get(actorId) ?? 0;
    if (depth >= MAILBOX_LIMIT) {
      this.counts.busy++;
      return Promise.reject(new AppError('room_busy', { message: `${MAILBOX_LIMIT} events are already waiting for this actor; retry shortly.`, details: { actorId: actorId.slice(actorId.indexOf(':') + 1) } }));
    }
    this.#depth.set(actorId, depth + 1);
    this.counts.events++;
    const done = () => {
      const d = (this.#depth.get(actorId) ?? 1) - 1;
      if (d > 0) this.#depth.set(actorId, d);
      else this.#depth.delete(actorId);
    };
    const prev = this.#tails.get(actorId) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    run.then(done, done);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(actorId, tail);
    void tail.then(() => {
      if (this.#tails.get(actorId) === tail) this.#tails.delete(actorId);
    });
    return run;
  }

  #definitionOf(actorId: string): { def: ActorDefinition; entityId: string } {
    const i = actorId.indexOf(':');
    const def = i > 0 ? this.#definitions.get(actorId.slice(0, i)) : undefined;
    if (!def) throw new AppError('not_found', { message: `No actor definition for ${actorId}.` });
    return { def, entityId: actorId.slice(i + 1) };
  }

  async #process(actorId: string, message: Record<string, unknown>, shard: number, epoch: number): Promise<unknown> {
    const { def, entityId } = this.#definitionOf(actorId);
    const { answerTo, ...raw } = message;
    const parsed = def.events.safeParse({ ...raw, at: this.#clock.now() });
    if (!parsed.success) throw validationError(parsed.error, 'body');
    let entry = this.#entries.get(actorId);
    if (entry && entry.epoch !== epoch) {
      this.#drop(actorId);
      entry = undefined;
    }
    entry ??= await this.#load(actorId, def, entityId, shard, epoch);
    entry.lastUsed = performance.now();
    return this.#apply(actorId, entry, parsed.data as Record<string, unknown>, answerToOf(answerTo));
  }

  async #load(actorId: string, def: ActorDefinition, entityId: string, shard: number, epoch: number): Promise<Entry> {
    const stored = await readActorState(this.#sql, actorId, def.version);
    let actor: AnyActor;
    if (stored?.state) {
      actor = createActor(def.machine, { snapshot: stored.state as never, input: undefined as never });
    } else {
      if (stored) this.#log.warn({ actorId, stored: stored.machineVersion, current: def.version }, 'snapshot of an older machine version: rebuilt from its row');
      const input = await def.input(this.#sql, entityId);
      if (!input) throw new AppError('not_found', { message: `No ${def.name} ${entityId}.` });
      actor = createActor(def.machine, { input });
    }
    actor.start();
    const entry: Entry = { actor, def, entityId, shard, epoch, lastUsed: performance.now(), state: new ActorState(stored, actor) };
    this.#entries.set(actorId, entry);
    if (!stored?.state && def.init) await this.#apply(actorId, entry, def.init(this.#clock.now()));
    return entry;
  }

  async #apply(actorId: string, entry: Entry, event: Record<string, unknown>, answerTo?: AnswerTo): Promise<unknown> {
    const { actor, def, entityId, shard, epoch } = entry;
    const effects: Effect[] = [];
    const before = actor.getSnapshot().context as Record<string, unknown>;
    const sub = actor.on('*', (e: Effect) => effects.push(e));
    try {
      actor.send(event as never);
    } finally {
      sub.unsubscribe();
    }
    const snap = actor.getSnapshot();
    if (snap.status === 'error') {
      this.#drop(actorId);
      throw new AppError('internal_error', { cause: snap.error });
    }
    const context = snap.context as Record<string, unknown>;
    const at = event.at as number;
    const reply = (effects.find((e) => e.type === 'reply')?.body as Record<string, unknown> | undefined) ?? { ok: true };
    let write: StateWrite;
    try {
      write = entry.state.plan(actor.getPersistedSnapshot(), def.compact?.(event, before, context) === true);
    } catch (err) {
      this.#drop(actorId);
      throw err;
    }
    try {
      await transaction(this.#sql, async (tx) => {
        await assertEpoch(tx, shard, epoch);
        await writeState(tx, this.#key(actorId, entry), write, at);
        if (event.type === 'TIMER') await tx`delete from actor_timers where actor_id = ${actorId} and name = ${event.name as string}`;
        for (const e of effects) {
          if (e.type === 'outbox') await this.#outbox.emit(tx, def.orgOf(context), e.eventType as EventType, e.data as Record<string, unknown>, at, { background: e.background === true });
          else if (e.type === 'timer.set') {
            await tx`insert into actor_timers (actor_id, name, shard, due_at) values (${actorId}, ${e.name as string}, ${shard}, ${iso(e.dueAt as number)})
              on conflict (actor_id, name) do update set due_at = excluded.due_at, shard = excluded.shard`;
          } else if (e.type === 'timer.cancel') await tx`delete from actor_timers where actor_id = ${actorId} and name = ${e.name as string}`;
          else if (def.effect && e.type !== 'send' && e.type !== 'disconnect' && e.type !== 'reply') await def.effect(tx, entityId, context, e, at, this.#env);
        }
        await def.project?.(tx, entityId, context, at);
        if (answerTo && def.answer && this.#storeAnswer && reply.ok !== false) {
          await this.#storeAnswer(tx, answerTo, await def.answer(tx, entityId, context, reply));
        }
      });
    } catch (err) {
      this.#drop(actorId);
      if (err instanceof AppError || !retryableDbError(err)) throw err;
      // The session was lost under the commit (say, the server ended a transaction that stalled while
      // this process was frozen) or the database asked for a retry: the actor is reloaded from what
      // the database holds, and the caller may retry, as with any actor_unavailable.
      throw new ActorUnavailableError({ message: `The change was not confirmed by the database (${(err as Error).message}); retry.`, cause: err });
    }
    entry.state.committed(write);
    const room = effects.filter((e): e is RoomEffect & Effect => e.type === 'send' || e.type === 'disconnect');
    if (room.length) this.#sink.deliver(actorId, room);
    for (const n of def.notices?.(entityId, before, context) ?? []) {
      this.#publish(n.channel, n.message).catch((err) => this.#log.warn({ err, from: actorId, channel: n.channel }, 'notice not published'));
    }
    for (const f of def.followUps?.(entityId, before, context) ?? []) {
      this.#send(f.actorId, f.event).catch((err) => this.#log.warn({ err, from: actorId, to: f.actorId }, 'follow-up not delivered'));
    }
    return reply;
  }
}
