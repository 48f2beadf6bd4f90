import { iso, type Clock } from '../../../core/clock.ts';
import { planHas, type PlanName } from '../../../core/plans.ts';
import { shardOf } from '../../../platform/cluster/cluster.ts';
import type { Sql } from '../../../platform/db/index.ts';
import { newId } from '../../../platform/ids.ts';
import { webhookActor } from '../envelope.ts';
import { logRow } from './outcomes.ts';

export const FANOUT_BATCH = 500;
/**
 * The shortest time between the starts of two fan-out passes. Every commit of an event kicks one; at a
 * thousand events a second, passes back to back took two events each (and woke the senders as often).
 * A pass after a quiet spell starts at once.
 */
export const FANOUT_INTERVAL_MS = 4;

/**
 * Fans out one batch of undispatched events: one `webhook_messages` row per matching ACTIVE endpoint,
 * a SKIPPED log row per DISABLED one; organizations whose plan lacks webhooks get nothing, except
 * background events. Returns how many events it read and the shards it wrote messages on.
 */
export async function fanOutBatch(sql: Sql, clock: Clock): Promise<{ read: number; shards: number[] }> {
  const rows = await sql<
    { id: string; orgId: string; type: string; background: boolean; endpointId: string | null; events: string[] | null; status: 'ACTIVE' | 'DISABLED' | null; plan: PlanName | null }[]
  >`select ev.id, ev.org_id, ev.type, ev.background, e.id as endpoint_id, e.events, e.status, o.plan
    from (select id, org_id, type, background from outbox where dispatched_at is null order by id limit ${FANOUT_BATCH}) ev
    left join webhook_endpoints e on e.org_id = ev.org_id
    left join organizations o on o.id = e.org_id`;
  if (!rows.length) return { read: 0, shards: [] };
  const now = clock.now();
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
      skipped.push(logRow({ endpointId: r.endpointId, orgId: r.orgId, messageId: null, eventId: r.id, eventType: r.type, attempt: 0, trigger: 'EVENT', at: now, result: 'SKIPPED' }));
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
  return { read: eventIds.size, shards: written!.shards };
}
