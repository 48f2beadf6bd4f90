import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '../core/clock.ts';
import { iso } from '../core/clock.ts';
import type { Sealer } from '../platform/crypto.ts';
import { sha256 } from '../platform/crypto.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { transaction } from '../platform/db/tx.ts';
import { AppError, type ErrorCode } from '../core/errors.ts';
import { toAppError } from '../platform/to-app-error.ts';
import type { Answer, AnswerTo } from '../platform/runtime/actor-runtime.ts';

/**
 * Replays are kept 24 hours. A request that died mid-flight holds its key 60 seconds: then the key is
 * free again, or, once a step of a `claim` request had committed, answers that step's answer.
 */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
export const IDEMPOTENCY_LOCK_MS = 60_000;
const KEY = /^[\x20-\x7e]{1,255}$/;

interface Stored<R> {
  status: number;
  reply?: R;
  error?: { code: string; message: string; details: Record<string, unknown> };
}

/**
 * How a route's work and its stored answer commit (RouteSpec.idempotency):
 * - `transaction`: the handler runs in the transaction that stores its answer; they commit together.
 * - `actor`: for a command to an actor (cancel, end, admit, deny), which commits its change in its own
 *   transaction, perhaps on another node: the command carries the key (`answerTo`, taken by the first ask
 *   the handler makes) and the actor's definition builds the answer in that transaction (`answer`), so
 *   the change and the stored answer commit together; a retry after a crash gets that answer. A refusal
 *   or a handler that never reached the actor stores its answer once the handler returns.
 * - `claim`: for work outside the database (a test event, a redelivery), in steps (`step`): each step's
 *   writes commit with the answer the request gives if it goes no further, the first step before the
 *   outside work starts. A retry after a crash gets the last step's answer and never runs the handler
 *   again, so the outside work happens at most once.
 */
export type IdempotencyMode = 'transaction' | 'actor' | 'claim';

// The key of an `actor` request, for the actor clients' first ask (takeAnswerTo); module-wide, since the
// clients and the store are built apart and the HTTP pipeline hands handlers nothing new.
const actorClaims = new AsyncLocalStorage<{ to: AnswerTo; taken: boolean }>();

/**
 * The key of the `actor` request this code runs in, the first time it is asked (the one command whose
 * change the answer commits with); afterwards, and outside such a request, undefined.
 */
export function takeAnswerTo(): AnswerTo | undefined {
  const c = actorClaims.getStore();
  if (!c || c.taken) return undefined;
  c.taken = true;
  return c.to;
}

/** The key a request holds while its handler runs (a `claim` request's is found by `step` through AsyncLocalStorage). */
interface Claim {
  scope: string;
  key: string;
  /** When this request reserved the key: a request whose key was taken over meanwhile must not write to it. */
  reservedAt: string;
  stepped: boolean;
}

/**
 * Idempotency-Key on POST: the first request reserves the key, runs, and stores its answer (how the work
 * and the answer commit: IdempotencyMode); later requests with the same key and body get that answer
 * replayed. Stored answers are encrypted, since they can hold join tokens.
 */
export class Idempotency {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #sealer: Sealer;
  // Found by `step` without a parameter, so the HTTP pipeline hands handlers nothing new.
  readonly #claims = new AsyncLocalStorage<Claim>();

  constructor(sql: Sql, clock: Clock, sealer: Sealer) {
    this.#sql = sql;
    this.#clock = clock;
    this.#sealer = sealer;
  }

  /** Runs `handler` once per key and body (see IdempotencyMode), or answers what the first run stored. */
  async run<R extends Answer>(
    req: { scope: string; key: string; method: string; path: string; body: unknown },
    handler: (db: Db) => Promise<R> | R,
    mode: IdempotencyMode = 'transaction',
  ): Promise<R> {
    if (!KEY.test(req.key)) throw new AppError('idempotency_key_invalid');
    const hash = sha256(`${req.method} ${req.path}\n${JSON.stringify(req.body)}`);
    const now = this.#clock.now();

    // A request that died holding the key frees it after its lock, unless a step of it committed (an
    // answer is stored): what that step did outside the database may have happened, so it is never run again.
    const [mine] = await this.#sql`insert into idempotency_keys (scope, key, request_hash, state, created_at, locked_until, expires_at)
      values (${req.scope}, ${req.key}, ${hash}, 'IN_PROGRESS', ${iso(now)}, ${iso(now + IDEMPOTENCY_LOCK_MS)}, ${iso(now + IDEMPOTENCY_TTL_MS)})
      on conflict (scope, key) do update set request_hash = excluded.request_hash, state = 'IN_PROGRESS',
        created_at = excluded.created_at, locked_until = excluded.locked_until, expires_at = excluded.expires_at,
        response_status = null, response_body = null
      where idempotency_keys.expires_at <= ${iso(now)}
        or (idempotency_keys.state = 'IN_PROGRESS' and idempotency_keys.locked_until <= ${iso(now)} and idempotency_keys.response_body is null)
      returning key`;
    if (!mine) return this.#existing<R>(req.scope, req.key, hash);

    const claim: Claim = { scope: req.scope, key: req.key, reservedAt: iso(now), stepped: false };
    try {
      if (mode === 'claim') {
        const reply = await this.#claims.run(claim, () => handler(this.#sql));
        await this.#finish(this.#sql, claim, { status: reply.status ?? 200, reply });
        return reply;
      }
      if (mode === 'actor') {
        const reply = await actorClaims.run({ to: { scope: claim.scope, key: claim.key, reservedAt: claim.reservedAt }, taken: false }, () => handler(this.#sql));
        await this.#finish(this.#sql, claim, { status: reply.status ?? 200, reply });
        return reply;
      }
      return await transaction(this.#sql, async (tx) => {
        const reply = await handler(tx);
        await this.#finish(tx, claim, { status: reply.status ?? 200, reply });
        return reply;
      });
    } catch (err) {
      const e = toAppError(err);
      if (e.status >= 500 || e.code === 'validation_failed' || e.code === 'rate_limited') {
        if (claim.stepped) {
          // Not freed: what a committed step did outside the database may have happened. A retry gets
          // that step's answer, now rather than after the lock, since this handler has ended (if even
          // this write fails, after the lock).
          await this.#sql`update idempotency_keys set locked_until = ${iso(this.#clock.now())}
            where scope = ${req.scope} and key = ${req.key} and state = 'IN_PROGRESS' and created_at = ${claim.reservedAt}`.catch(() => {});
        } else {
          await this.#sql`delete from idempotency_keys where scope = ${req.scope} and key = ${req.key} and state = 'IN_PROGRESS' and created_at = ${claim.reservedAt}`;
        }
      } else {
        await this.#finish<R>(this.#sql, claim, {
          status: e.status,
          error: { code: e.code, message: e.message, details: e.details },
        });
      }
      throw err;
    }
  }

  /**
   * One step of a `claim` request: `work` commits in a transaction that also stores `answer(result)` as
   * the answer to the request's key, should the request go no further (the process dies, or a later step
   * fails with a 5xx). Outside a `claim` request (no Idempotency-Key, or another mode) `work` just commits.
   */
  async step<T>(work: (tx: Db) => Promise<T>, answer: (result: T) => Answer): Promise<T> {
    const claim = this.#claims.getStore();
    return transaction(this.#sql, async (tx) => {
      const result = await work(tx);
      if (claim) {
        const reply = answer(result);
        const status = reply.status ?? 200;
        const [held] = await tx`update idempotency_keys set response_status = ${status},
            response_body = ${this.#sealer.sealJson({ status, reply } satisfies Stored<Answer>)},
            locked_until = ${iso(this.#clock.now() + IDEMPOTENCY_LOCK_MS)}
          where scope = ${claim.scope} and key = ${claim.key} and state = 'IN_PROGRESS' and created_at = ${claim.reservedAt}
          returning key`;
        // Taken over after this request held it past its lock: another run owns the key, this one stops.
        if (!held) throw new AppError('idempotency_in_progress', { message: 'This request held its Idempotency-Key too long; another request with the key is running.' });
        claim.stepped = true;
      }
      return result;
    });
  }

  /**
   * An `actor` request's answer, stored by the actor's definition in the transaction of the command's
   * change (ActorRuntime's `storeAnswer`). Throws, and so rolls the change back, when the key is no longer
   * that request's (taken over after it held the key past its lock).
   */
  readonly storeAnswer = async (tx: Db, to: AnswerTo, answer: Answer): Promise<void> => {
    const status = answer.status ?? 200;
    const [held] = await tx`update idempotency_keys set state = 'DONE', response_status = ${status},
        response_body = ${this.#sealer.sealJson({ status, reply: answer } satisfies Stored<Answer>)}
      where scope = ${to.scope} and key = ${to.key} and state = 'IN_PROGRESS' and created_at = ${to.reservedAt}
      returning key`;
    if (!held) throw new AppError('idempotency_in_progress', { message: 'This request held its Idempotency-Key too long; another request with the key is running.' });
  };

  /**
   * Stores the answer, unless another request took the key over after this one held it past its lock, or
   * an actor already stored it with the command's change (`actor`).
   */
  async #finish<R>(db: Db, claim: Claim, stored: Stored<R>): Promise<void> {
    await db`update idempotency_keys set state = 'DONE', response_status = ${stored.status},
      response_body = ${this.#sealer.sealJson(stored)} where scope = ${claim.scope} and key = ${claim.key} and created_at = ${claim.reservedAt} and state = 'IN_PROGRESS'`;
  }

  async #existing<R extends Answer>(scope: string, key: string, hash: Buffer): Promise<R> {
    const [row] = await this.#sql<{ requestHash: Buffer; state: string; responseBody: Buffer | null; lockedUntil: Date }[]>`
      select request_hash, state, response_body, locked_until from idempotency_keys where scope = ${scope} and key = ${key}`;
    if (!row) throw new AppError('idempotency_in_progress');
    if (!row.requestHash.equals(hash)) throw new AppError('idempotency_key_reused');
    if (!row.responseBody) throw new AppError('idempotency_in_progress');
    // A `claim` request's last step answer: while its request may still run, it is not the answer yet.
    if (row.state === 'IN_PROGRESS' && row.lockedUntil.getTime() > this.#clock.now()) throw new AppError('idempotency_in_progress');
    const stored = this.#sealer.openJson<Stored<R>>(row.responseBody);
    if (!stored) throw new AppError('internal_error', { message: 'A stored idempotent response could not be read.' });
    if (stored.error) {
      throw new AppError(stored.error.code as ErrorCode, { message: stored.error.message, details: stored.error.details, headers: { 'Idempotent-Replayed': 'true' } });
    }
    const reply = stored.reply!;
    return { ...reply, headers: { ...reply.headers, 'Idempotent-Replayed': 'true' } };
  }
}
