import type { Redis } from 'ioredis';
import type { Sql } from '../db/index.ts';
import { SHARD_COUNT, type Placement, type PlacementMember } from './cluster.ts';

/** Every Redis key and channel of the cluster, under the configured prefix. */
export function clusterKeys(prefix: string) {
  return {
    /** Sorted set: member id scored by the Redis time (ms) its registration expires. */
    members: `${prefix}cluster:members`,
    /** Hash: member id -> JSON MemberInfo. */
    info: `${prefix}cluster:info`,
    /** Channel: joins, leaves and released shards, so members rebalance without waiting for a tick. */
    events: `${prefix}cluster:events`,
    lease: (shard: number) => `${prefix}shard:${shard}`,
    inbox: (memberId: string) => `${prefix}inbox:${memberId}`,
    reply: (memberId: string) => `${prefix}reply:${memberId}`,
  };
}

export interface MemberInfo {
  host: string;
  pid: number;
  startedAt: string;
  /** Redis time (ms) of the last heartbeat. */
  seen: number;
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Rendezvous weight of (member, shard): FNV-1a with murmur3's finaliser, so similar ids still spread. */
function weight(memberId: string, shard: number): number {
  let h = 0x811c9dc5;
  const s = `${memberId}\u0000${shard}`;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return fmix32(h >>> 0);
}

/**
 * The desired owner of every shard: the live member with the highest weight for it (rendezvous
 * hashing). Every member computes the same answer from the same member list, and a join or leave
 * moves only the shards that the joining or leaving member wins or held.
 */
export function desiredOwners(memberIds: readonly string[]): (string | null)[] {
  const out: (string | null)[] = [];
  for (let shard = 0; shard < SHARD_COUNT; shard++) {
    let best: string | null = null;
    let bestW = -1;
    for (const id of memberIds) {
      const w = weight(id, shard);
      if (w > bestW || (w === bestW && best !== null && id > best)) {
        best = id;
        bestW = w;
      }
    }
    out.push(best);
  }
  return out;
}

/**
 * Who is in the cluster and who holds each shard, read from where it lives: members and leases in
 * Redis, epochs in Postgres. With no Redis (one process), owners come from Postgres and members are empty.
 */
export async function readPlacement(redis: Redis | null, sql: Sql, prefix: string): Promise<Placement> {
  const rows = await sql<{ id: number; epoch: string; owner: string | null }[]>`select id, epoch, owner from shards order by id`;
  if (!redis) {
    return { members: [], shards: rows.map((r) => ({ shard: r.id, owner: r.owner, epoch: Number(r.epoch) })) };
  }
  const keys = clusterKeys(prefix);
  const [sec, micro] = await redis.time();
  const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
  const ids = await redis.zrangebyscore(keys.members, now, '+inf');
  const infos = ids.length ? await redis.hmget(keys.info, ...ids) : [];
  const members: PlacementMember[] = ids.map((id, i) => {
    let info: Partial<MemberInfo> = {};
    try {
      info = JSON.parse(infos[i] ?? '{}') as MemberInfo;
    } catch {
      // a member mid-registration: list it with what we know
    }
    return {
      id,
      host: info.host ?? '',
      pid: info.pid ?? 0,
      startedAt: info.startedAt ?? '',
      lastSeenMsAgo: info.seen === undefined ? -1 : Math.max(0, now - info.seen),
    };
  });
  const holders = await redis.mget(...rows.map((r) => keys.lease(r.id)));
  return { members, shards: rows.map((r, i) => ({ shard: r.id, owner: holders[i] ?? null, epoch: Number(r.epoch) })) };
}

/** The placement as `aula cluster status` prints it. */
export function formatPlacement(p: Placement): string {
  const lines: string[] = [];
  const held = new Map<string, number>();
  for (const s of p.shards) if (s.owner) held.set(s.owner, (held.get(s.owner) ?? 0) + 1);
  lines.push(`${p.members.length} member${p.members.length === 1 ? '' : 's'}`);
  for (const m of p.members) {
    lines.push(`  ${m.id}  ${m.host}:${m.pid}  started ${m.startedAt}  seen ${m.lastSeenMsAgo} ms ago  ${held.get(m.id) ?? 0} shards`);
  }
  const unowned = p.shards.filter((s) => !s.owner).length;
  lines.push(`${p.shards.length} shards, ${p.shards.length - unowned} owned, ${unowned} without an owner`);
  lines.push('  shard  epoch  owner');
  for (const s of p.shards) lines.push(`  ${String(s.shard).padStart(5)}  ${String(s.epoch).padStart(5)}  ${s.owner ?? '-'}`);
  return lines.join('\n');
}
