import type { Db, Sql } from '../db/index.ts';
import { ActorUnavailableError } from './cluster.ts';

/**
 * A write refused because the shard's epoch moved on: another node took the shard, so this one's
 * view of the actor is stale. The transaction it was thrown in must roll back (it does when the
 * error escapes `sql.begin`). Retryable: the caller's retry reaches the new owner.
 */
export class FencedError extends ActorUnavailableError {
  override name = 'FencedError';
  readonly shard: number;
  readonly epoch: number;
  readonly current: number | null;
  constructor(shard: number, epoch: number, current: number | null) {
    super({ message: `shard ${shard} is fenced: epoch ${epoch} is stale (now ${current ?? 'missing'})`, details: { shard, epoch, current } });
    this.shard = shard;
    this.epoch = epoch;
    this.current = current;
  }
}

/**
 * Call inside the transaction of every actor write, with the epoch the shard was acquired with.
 * `for share` holds the row until the caller commits, and a takeover's epoch bump (an update of the
 * same row) waits for it; so the write lands wholly before the takeover, or is refused after it.
 */
export async function assertEpoch(tx: Db, shard: number, epoch: number): Promise<void> {
  // An owner frozen mid-commit (SIGSTOP, GC) would hold this lock indefinitely and block the takeover's
  // epoch bump; past the step-down time its lease is gone anyway, so Postgres ends such a transaction.
  const rows = await tx<{ epoch: string }[]>`select epoch, set_config('idle_in_transaction_session_timeout', '2000', true)
    from shards where id = ${shard} for share`;
  const current = rows[0] ? Number(rows[0].epoch) : null;
  if (current !== epoch) throw new FencedError(shard, epoch, current);
}

/**
 * The current epochs of `shards`, each row held `for share` until the caller commits, exactly as
 * `assertEpoch` holds one (with the same server-side limit on a stalled transaction). For work that
 * spans several shards at once: keep only what belongs to shards whose epoch is still the caller's.
 */
export async function lockEpochs(tx: Db, shards: readonly number[]): Promise<Map<number, number>> {
  if (!shards.length) return new Map();
  const rows = await tx<{ id: number; epoch: string }[]>`select id, epoch, set_config('idle_in_transaction_session_timeout', '2000', true)
    from shards where id in ${tx(shards as number[])} for share`;
  return new Map(rows.map((r) => [r.id, Number(r.epoch)]));
}

/** How long a takeover waits for a former owner's in-flight write to commit before trying again later. */
const ACQUIRE_LOCK_TIMEOUT = '2s';

/** Fences a shard for `nodeId`: every earlier owner's writes are refused from now on. Returns the new epoch. */
export async function acquireEpoch(sql: Sql, shard: number, nodeId: string): Promise<number> {
  const rows = await sql.begin(async (tx) => {
    await tx.unsafe(`set local lock_timeout = '${ACQUIRE_LOCK_TIMEOUT}'`);
    return tx<{ epoch: string }[]>`
      update shards set epoch = epoch + 1, owner = ${nodeId}, acquired_at = now() where id = ${shard} returning epoch`;
  });
  const row = rows[0];
  if (!row) throw new Error(`shard ${shard} has no row in shards (SHARD_COUNT and the 0002_cluster migration disagree)`);
  return Number(row.epoch);
}

/** After a hand-over, records that nobody holds the shard. Does not bump the epoch; a no-op if someone else took it since. */
export async function releaseEpoch(sql: Sql, shard: number, nodeId: string, epoch: number): Promise<void> {
  await sql`update shards set owner = null where id = ${shard} and owner = ${nodeId} and epoch = ${epoch}`;
}
