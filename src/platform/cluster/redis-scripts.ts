import type { Redis } from 'ioredis';

/**
 * Registers the node (unless ARGV[4] is '0', when it is leaving), prunes nodes whose
 * registration expired, and returns the Redis time with the live nodes and their expiries.
 * Redis's clock is the only one used, so nodes' clocks may disagree.
 */
const HEARTBEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[1], string.format('%d', now + tonumber(ARGV[2])), ARGV[1])
  redis.call('HSET', KEYS[2], ARGV[1], string.sub(ARGV[3], 1, -2) .. ',"seen":' .. string.format('%d', now) .. '}')
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
if #dead > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
  redis.call('HDEL', KEYS[2], unpack(dead))
end
return {string.format('%d', now), redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')}
`;

/** Extends every lease in KEYS still held by ARGV[1]; 1 per key extended, 0 per key lost. */
const RENEW = `
local out = {}
for i, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then
    redis.call('PEXPIRE', k, ARGV[2])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`;

/**
 * SET NX PX, except that a lease this node still holds (it stepped down before the lease expired)
 * is taken again: the epoch bump that follows fences the earlier tenure all the same.
 * Returns {1, 0} when taken, {0, pttl} when someone else holds it.
 */
const ACQUIRE = `
local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, 0}
end
return {0, redis.call('PTTL', KEYS[1])}
`;

/** Deletes the lease only if ARGV[1] holds it. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

export interface ClusterCommands {
  aulaHeartbeat(nodes: string, info: string, nodeId: string, ttlMs: number, infoJson: string, register: '1' | '0'): Promise<[string, string[]]>;
  aulaRenew(...args: (string | number)[]): Promise<number[]>;
  aulaAcquire(lease: string, nodeId: string, leaseMs: number): Promise<[number, number]>;
  aulaRelease(lease: string, nodeId: string): Promise<number>;
}

/** The cluster's scripts as commands on `redis` (EVALSHA, loaded on first use). */
export function clusterCommands(redis: Redis): Redis & ClusterCommands {
  redis.defineCommand('aulaHeartbeat', { numberOfKeys: 2, lua: HEARTBEAT });
  redis.defineCommand('aulaRenew', { lua: RENEW });
  redis.defineCommand('aulaAcquire', { numberOfKeys: 1, lua: ACQUIRE });
  redis.defineCommand('aulaRelease', { numberOfKeys: 1, lua: RELEASE });
  return redis as Redis & ClusterCommands;
}
