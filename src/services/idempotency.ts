import type { Clock } from '../core/clock.ts';
import { iso } from '../core/clock.ts';
import type { Sealer } from '../platform/crypto.ts';
import { sha256 } from '../platform/crypto.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { transaction } from '../platform/db/tx.ts';
import { AppError, type ErrorCode } from '../core/errors.ts';
import { toAppError } from '../platform/to-app-error.ts';

/** Replays are kept 24 hours; a request that died mid-flight frees its key after 60 seconds. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60_000;
export const IDEMPOTENCY_LOCK_MS = 60_000;
const KEY = /^[\x20-\x7e]{1,255}$/;

/** A response to keep and replay: its status and headers, and whatever else the caller's response holds (stored as JSON). */
export interface Replayable {
  status?: number;
  headers?: Record<string, string>;
}

interface Stored<R> {
  status: number;
  reply?: R;
  error?: { code: string; message: string; details: Record<string, unknown> };
}

/**
 * Idempotency-Key on POST: the first request reserves the key, runs in a transaction that also stores
 * its response, and later requests with the same key and body get that response replayed. Stored
 * responses are encrypted, since they can hold join tokens.
 */
export class Idempotency {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #sealer: Sealer;

  constructor(sql: Sql, clock: Clock, sealer: Sealer) {
    this.#sql = sql;
    this.#clock = clock;
    this.#sealer = sealer;
  }

  /**
   * `transaction`: the handler runs in the transaction that stores its response. `after`: for handlers
   * that ask actors (which commit on their own connections), the response is stored once the handler
   * returns; those operations are idempotent by nature (cancel, end), so a crash in between only
   * repeats a no-op.
   */
  async run<R extends Replayable>(
    req: { scope: string; key: string; method: string; path: string; body: unknown },
    handler: (db: Db) => Promise<R> | R,
    mode: 'transaction' | 'after' = 'transaction',
  ): Promise<R> {
    if (!KEY.test(req.key)) throw new AppError('idempotency_key_invalid');
    const hash = sha256(`${req.method} ${req.path}\n${JSON.stringify(req.body)}`);
    const now = this.#clock.now();

    const [mine] = await this.#sql`insert into idempotency_keys (scope, key, request_hash, state, created_at, locked_until, expires_at)
      values (${req.scope}, ${req.key}, ${hash}, 'IN_PROGRESS', ${iso(now)}, ${iso(now + IDEMPOTENCY_LOCK_MS)}, ${iso(now + IDEMPOTENCY_TTL_MS)})
      on conflict (scope, key) do update set request_hash = excluded.request_hash, state = 'IN_PROGRESS',
        created_at = excluded.created_at, locked_until = excluded.locked_until, expires_at = excluded.expires_at,
        response_status = null, response_body = null
      where idempotency_keys.expires_at <= ${iso(now)}
        or (idempotency_keys.state = 'IN_PROGRESS' and idempotency_keys.locked_until <= ${iso(now)})
      returning key`;
    if (!mine) return this.#existing<R>(req.scope, req.key, hash);

    try {
      if (mode === 'after') {
        const reply = await handler(this.#sql);
        await this.#finish(this.#sql, req.scope, req.key, { status: reply.status ?? 200, reply });
        return reply;
      }
      return await transaction(this.#sql, async (tx) => {
        const reply = await handler(tx);
        await this.#finish(tx, req.scope, req.key, { status: reply.status ?? 200, reply });
        return reply;
      });
    } catch (err) {
      const e = toAppError(err);
      if (e.status >= 500 || e.code === 'validation_failed' || e.code === 'rate_limited') {
        await this.#sql`delete from idempotency_keys where scope = ${req.scope} and key = ${req.key} and state = 'IN_PROGRESS'`;
      } else {
        await this.#finish<R>(this.#sql, req.scope, req.key, {
          status: e.status,
          error: { code: e.code, message: e.message, details: e.details },
        });
      }
      throw err;
    }
  }

  async #finish<R>(db: Db, scope: string, key: string, stored: Stored<R>): Promise<void> {
    await db`update idempotency_keys set state = 'DONE', response_status = ${stored.status},
      response_body = ${this.#sealer.sealJson(stored)} where scope = ${scope} and key = ${key}`;
  }

  async #existing<R extends Replayable>(scope: string, key: string, hash: Buffer): Promise<R> {
    const [row] = await this.#sql<{ requestHash: Buffer; state: string; responseBody: Buffer | null }[]>`
      select request_hash, state, response_body from idempotency_keys where scope = ${scope} and key = ${key}`;
    if (!row) throw new AppError('idempotency_in_progress');
    if (!row.requestHash.equals(hash)) throw new AppError('idempotency_key_reused');
    if (row.state === 'IN_PROGRESS' || !row.responseBody) throw new AppError('idempotency_in_progress');
    const stored = this.#sealer.openJson<Stored<R>>(row.responseBody);
    if (!stored) throw new AppError('internal_error', { message: 'A stored idempotent response could not be read.' });
    if (stored.error) {
      throw new AppError(stored.error.code as ErrorCode, { message: stored.error.message, details: stored.error.details, headers: { 'Idempotent-Replayed': 'true' } });
    }
    const reply = stored.reply!;
    return { ...reply, headers: { ...reply.headers, 'Idempotent-Replayed': 'true' } };
  }
}
