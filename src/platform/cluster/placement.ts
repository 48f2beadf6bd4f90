import type { Redis } from 'ioredis';
import type { Sql } from '../db/index.ts';
import { SHARD_COUNT, type Placement, type PlacementNode } from './cluster.ts';

/** Every Redis key and channel of the cluster, under the configured prefix. */
export function clusterKeys(prefix: string) {
  return {
    /** Sorted set: node id scored by the Redis time (ms) its registration expires. */
    nodes: `${prefix}cluster:nodes`,
    /** Hash: node id -> JSON NodeInfo. */
    info: `${prefix}cluster:info`,
    /** Channel: joins, leaves and released shards, so nodes rebalance without waiting for a tick. */
    events: `${prefix}cluster:events`,
    lease: (shard: number) => `${prefix}shard:${shard}`,
    inbox: (nodeId: string) => `${prefix}inbox:${nodeId}`,
    reply: (nodeId: string) => `${prefix}reply:${nodeId}`,
  };
}

export interface NodeInfo {
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

/** Rendezvous weight of (node, shard): FNV-1a with murmur3's finaliser, so similar ids still spread. */
function weight(nodeId: string, shard: number): number {
  let h = 0x811c9dc5;
  const s = `${nodeId}\u0000${shard}`;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return fmix32(h >>> 0);
}

/**
 * The desired owner of every shard: the live node with the highest weight for it (rendezvous
 * hashing). Every node computes the same answer from the same node list, and a join or leave
 * moves only the shards that the joining or leaving node wins or held.
 */
export function desiredOwners(nodeIds: readonly string[]): (string | null)[] {
  const out: (string | null)[] = [];
  for (let shard = 0; shard < SHARD_COUNT; shard++) {
    let best: string | null = null;
    let bestW = -1;
    for (const id of nodeIds) {
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
 * Who is in the cluster and who holds each shard, read from where it lives: nodes and leases in
 * Redis, epochs in Postgres. With no Redis (one process), owners come from Postgres and nodes are empty.
 */
export async function readPlacement(redis: Redis | null, sql: Sql, prefix: string): Promise<Placement> {
  const rows = await sql<{ id: number; epoch: string; owner: string | null }[]>`select id, epoch, owner from shards order by id`;
  if (!redis) {
    return { nodes: [], shards: rows.map((r) => ({ shard: r.id, owner: r.owner, epoch: Number(r.epoch) })) };
  }
  const keys = clusterKeys(prefix);
  const [sec, micro] = await redis.time();
  const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
  const ids = await redis.zrangebyscore(keys.nodes, now, '+inf');
  const infos = ids.length ? await redis.hmget(keys.info, ...ids) : [];
  const nodes: PlacementNode[] = ids.map((id, i) => {
    let info: Partial<NodeInfo> = {};
    try {
      info = JSON.parse(infos[i] ?? '{}') as NodeInfo;
    } catch {
      // a node mid-registration: list it with what we know
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
  return { nodes, shards: rows.map((r, i) => ({ shard: r.id, owner: holders[i] ?? null, epoch: Number(r.epoch) })) };
}

/** The placement as `aula cluster status` prints it. */
export function formatPlacement(p: Placement): string {
  const lines: string[] = [];
  const held = new Map<string, number>();
  for (const s of p.shards) if (s.owner) held.set(s.owner, (held.get(s.owner) ?? 0) + 1);
  lines.push(`${p.nodes.length} node${p.nodes.length === 1 ? '' : 's'}`);
  for (const m of p.nodes) {
    lines.push(`  ${m.id}  ${m.host}:${m.pid}  started ${m.startedAt}  seen ${m.lastSeenMsAgo} ms ago  ${held.get(m.id) ?? 0} shards`);
  }
  const unowned = p.shards.filter((s) => !s.owner).length;
  lines.push(`${p.shards.length} shards, ${p.shards.length - unowned} owned, ${unowned} without an owner`);
  lines.push('  shard  epoch  owner');
  for (const s of p.shards) lines.push(`  ${String(s.shard).padStart(5)}  ${String(s.epoch).padStart(5)}  ${s.owner ?? '-'}`);
  return lines.join('\n');
}
