import type { z } from 'zod';
import type { Refusal } from '../../core/actor-effects.ts';
import type { Cluster } from '../../platform/cluster/cluster.ts';
import { AppError, errorCatalog, type ErrorCode } from '../../core/errors.ts';
import { takeAnswerTo } from '../idempotency.ts';

/** An event's fields as a caller gives them: the schema's shape without `type` and the host-stamped `at`. */
export type Args<TEvent extends { type: string }, T extends TEvent['type']> = Omit<Extract<TEvent, { type: T }>, 'type' | 'at'>;

/** `ALLOW_UNMUTE` -> `allowUnmute`: the method name of an event type. */
type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${Lowercase<H>}${Capitalize<Camel<T>>}` : Lowercase<S>;

/** An event with no fields of its own takes no argument. */
export type ArgList<TEvent extends { type: string }, T extends TEvent['type']> = keyof Args<TEvent, T> extends never ? [args?: Args<TEvent, T>] : [args: Args<TEvent, T>];

/** `true` when the client has a method for every event type of the actor (named as Camel says), else the names missing. */
export type CoversEvents<TClient, TEvent extends { type: string }> = Exclude<Camel<TEvent['type']>, keyof TClient> extends never ? true : Exclude<Camel<TEvent['type']>, keyof TClient>;

/** Thrown for a refusal from an actor: the catalog code and message the machine gave, as an AppError. */
export class RoomRefusal extends AppError {
  override name = 'RoomRefusal';
}

function refusalError(r: Refusal): AppError {
  const code = (Object.hasOwn(errorCatalog, r.error.code) ? r.error.code : 'internal_error') as ErrorCode;
  return new RoomRefusal(code, { message: r.error.message, details: r.error.details ?? {} });
}

/**
 * A typed client for one kind of actor: `ask(entityId, 'ALLOW_UNMUTE', args)`, the event checked against
 * the actor's zod schema before it leaves (so a wrong call fails here, not in another process), the reply
 * typed by the machine's reply contract, and a refusal thrown as a RoomRefusal with the machine's code.
 * Each actor's client (clients.ts) writes out one method per event on top of it.
 */
export class ActorClient<TEvent extends { type: string }, TReplies extends Record<TEvent['type'], { ok: true }>> {
  readonly #cluster: Cluster;
  readonly #schema: z.ZodType;
  readonly #actorId: (entityId: string) => string;

  constructor(cluster: Cluster, schema: z.ZodType, actorId: (entityId: string) => string) {
    this.#cluster = cluster;
    this.#schema = schema;
    this.#actorId = actorId;
  }

  #event<T extends TEvent['type']>(type: T, args: Args<TEvent, T>): Record<string, unknown> {
    const event = { type, ...args };
    // `at` is stamped by the host; 0 stands in for it so the rest of the event is checked here.
    const checked = this.#schema.safeParse({ ...event, at: 0 });
    if (!checked.success) throw new AppError('internal_error', { message: `bad ${type} event: ${checked.error.issues[0]?.message}`, cause: checked.error });
    return event;
  }

  /**
   * Asks and waits for the reply; a refusal is thrown. The first ask of an idempotent request in `actor`
   * mode carries its key, so the actor stores the request's answer with the change (IdempotencyMode).
   */
  async ask<T extends TEvent['type']>(entityId: string, type: T, ...[args]: ArgList<TEvent, T>): Promise<TReplies[T]> {
    const event = this.#event(type, (args ?? {}) as Args<TEvent, T>);
    const answerTo = takeAnswerTo();
    const reply = await this.#cluster.ask<TReplies[T] | Refusal>(this.#actorId(entityId), answerTo ? { ...event, answerTo } : event);
    if (reply.ok === false) throw refusalError(reply as Refusal);
    return reply as TReplies[T];
  }

  /** Delivers without waiting for the outcome (resolves once the owner took it). */
  send<T extends TEvent['type']>(entityId: string, type: T, ...[args]: ArgList<TEvent, T>): Promise<void> {
    return this.#cluster.send(this.#actorId(entityId), this.#event(type, (args ?? {}) as Args<TEvent, T>));
  }
}
