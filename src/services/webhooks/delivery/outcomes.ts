import postgres from 'postgres';
import { iso, type Clock } from '../../../core/clock.ts';
import type { Cluster } from '../../../platform/cluster/cluster.ts';
import { Batcher } from '../../../platform/db/batch.ts';
import type { Sql } from '../../../platform/db/index.ts';
import type { Logger } from '../../../platform/logger.ts';
import type { Metrics } from '../../../platform/metrics.ts';
import { attemptRow, webhookActor, type AttemptRecord } from '../envelope.ts';
import type { DeliveryResult } from '../sender.ts';
import type { Claimed } from './claims.ts';
import { afterAttempt } from './retry.ts';

/**
 * How long an outcome waits for others to share its statement. The endpoint's slot is free already
 * (the message stays claimed until then), so this delays nothing a receiver sees; at a thousand sends
 * a second it makes one statement (and one commit) of about twenty outcomes instead of one or two.
 */
const OUTCOME_LINGER_MS = 20;

export interface Outcome {
  m: Claimed;
  startedAt: number;
  result: DeliveryResult;
}

export interface OutcomesOptions {
  sql: Sql;
  clock: Clock;
  cluster: Cluster;
  log: Logger;
  metrics?: Metrics | undefined;
  /** Jitter source of the retry schedule. */
  random: () => number;
}

/**
 * A delivery-log row as `jsonb_populate_recordset(null::webhook_attempts, …)` takes it: its keys in the
 * columns' snake case (postgres.js's own conversion; the json parameter is not rewritten by the transform).
 */
export const logRow = (r: AttemptRecord): Record<string, unknown> => Object.fromEntries(Object.entries(attemptRow(r)).map(([k, v]) => [postgres.fromCamel(k), v]));

/** Outcomes recorded in batches, one statement at a time. */
export function outcomeRecorder(o: OutcomesOptions): Batcher<Outcome> {
  return new Batcher<Outcome>((batch) => recordOutcomes(o, batch), { concurrency: 1, maxItems: 128, lingerMs: OUTCOME_LINGER_MS });
}

/**
 * Records a batch of outcomes in one statement: the shards' epochs are checked first, each shard's
 * row held `for share` until the statement commits (outcomes of shards this node no longer holds
 * at the claim's epoch are dropped: their new owner sends again), then the log rows and the
 * messages' new states. Then the endpoint actors hear what changes them.
 */
export async function recordOutcomes(o: OutcomesOptions, batch: Outcome[]): Promise<void> {
  const { sql } = o;
  const now = o.clock.now();
  const rows = batch.map((b) => ({ o: b, ...afterAttempt(b.m.attempts, b.result, now, o.random) }));
  const log = rows.map((r) =>
    logRow({
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
    o.log.debug({ dropped: rows.length - recordedIds.size }, 'webhook outcomes not recorded: their shards moved on (the new owners send again)');
  }
  for (const r of rows) {
    if (!recordedIds.has(r.o.m.id)) continue;
    const outcome = r.o.result.ok ? 'succeeded' : r.gone ? 'gone' : r.status === 'PENDING' ? 'retry' : 'failed';
    // a success at debug (one a second per event would drown the rest), anything else at info
    const line = { endpointId: r.o.m.endpointId, messageId: r.o.m.id, eventId: r.o.m.eventId, attempt: r.attempts, outcome, statusCode: r.o.result.status ?? null, nextAttemptAt: r.next === null ? null : iso(r.next) };
    if (outcome === 'succeeded') o.log.debug(line, 'webhook delivery');
    else o.log.info({ ...line, error: r.o.result.error?.kind ?? null, ms: r.o.result.durationMs }, 'webhook delivery');
    // the lag of a message's first attempt: from its event's commit to the attempt's start
    o.metrics?.delivery(outcome, r.attempts === 1 ? (r.o.startedAt - r.o.m.eventCreatedAt.getTime()) / 1000 : undefined);
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
    await o.cluster.ask(webhookActor(m.endpointId), event).catch((err) =>
      o.log.warn({ err, endpointId: m.endpointId, event: event.type }, 'the endpoint actor did not hear a delivery outcome; the next outcome tells it'),
    );
  }
  // these messages may be due again (a retry) or their shards may have room: nothing to do here, the
  // poll and the next wake-ups find them
}
