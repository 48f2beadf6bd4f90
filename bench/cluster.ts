/**
 * The cluster benchmarks: `npm run bench -- --scenario cluster [options]` (bench/run.ts hands over here).
 *
 *   latency      an ask to an actor owned by another node (over Redis) against the same ask to an
 *                actor owned by the asking node (in-process), in the same run, interleaved: an echo
 *                actor (routing only) and a real LIVE meeting actor (a HAND raised or lowered: transition + commit)
 *   failover     kill -9 of a node: until all its shards are owned again, until an actor on one of
 *                them answers (echo, and a LIVE meeting actor rehydrated from its snapshot)
 *   memory       heap and RSS per idle meeting actor: N actors loaded, minus the same node with them
 *                passivated, divided by N (and again after rehydrating them from their snapshots)
 *   connections  media-gateway WebSockets one node holds (each joined to a room), heap and RSS per
 *                connection, and ping round trips while it holds them
 *
 * Nodes are real (bench/servers/cluster-node.ts: startNode with Redis and Postgres) in their own
 * processes; the database and the Redis prefix are created for the run and removed at the end.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './lib/args.ts';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import WebSocket from 'ws';
import { shardOf } from '../src/platform/cluster/cluster.ts';
import { desiredOwners, readPlacement } from '../src/platform/cluster/placement.ts';
import { pgOptions, type Sql } from '../src/platform/db/index.ts';
import { startRpcChild, type RpcChild } from './lib/rpc.ts';
import { REDIS_URL, scratchBackends } from './lib/scratch.ts';
import { cleanup, cleanups } from './lib/cleanup.ts';

const USAGE = `npm run bench -- --scenario cluster [options]

  --parts LIST      latency,failover,memory,connections (default: all four)
  --asks N          asks per case in the latency part (after 200 unrecorded)     [4000]
  --kills N         kill -9 rounds in the failover part                           [3]
  --actors N        meeting actors loaded in the memory part                     [10000]
  --connections N   room WebSockets opened in the connections part               [10000]
  --per-meeting N   connections per meeting (the first a host)                    [20]
  --out FILE        JSON results                       [bench/results/cluster-<time>.json]
  --json            also print the results as one JSON object on stdout (the report goes to stderr)
  --no-pin          do not pin nodes and the load to cores

Environment: AULA_BENCH_DATABASE_URL (admin URL, a database is created and dropped), AULA_BENCH_REDIS_URL.`;

const { opt, int } = benchArgs(
  USAGE,
  {
    parts: { type: 'string', default: 'latency,failover,memory,connections' },
    asks: { type: 'string', default: '4000' },
    kills: { type: 'string', default: '3' },
    actors: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '10000' },
    'per-meeting': { type: 'string', default: '20' },
    out: { type: 'string' },
    json: { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
  },
  'cluster',
);
const PARTS = ['latency', 'failover', 'memory', 'connections'] as const;
const parts = new Set(opt.parts.split(',').map((p) => p.trim()));
for (const p of parts) {
  if (!(PARTS as readonly string[]).includes(p)) {
    console.error(`unknown part ${p}; known: ${PARTS.join(', ')}`);
    process.exit(2);
  }
}
const asks = int('asks', opt.asks, 100);
const kills = int('kills', opt.kills, 1);
const actorCount = int('actors', opt.actors, 100);
const connCount = int('connections', opt.connections, 10);
const perMeeting = int('per-meeting', opt['per-meeting'], 1);
const hasTaskset = spawnSync('taskset', ['--version']).status === 0;
const pin = !opt['no-pin'] && availableParallelism() >= 2 && hasTaskset;

const here = new URL('.', import.meta.url).pathname;
const NODE = join(here, 'servers/cluster-node.ts');


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (values: number[], p: number): number => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};
const median = (v: number[]) => pct(v, 50);
const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
const kib = (b: number) => `${(b / 1024).toFixed(2)} KiB`;

interface NodeInfo {
  nodeId: string;
  port: number;
  url: string;
  pid: number;
}
interface Memory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  actors: number;
  connections: number;
  gc: boolean;
}

// ---- the run's database, Redis prefix and nodes -----------------------------------------------

const { dbUrl, redisPrefix: prefix } = await scratchBackends(cleanups);
const redis = new Redis(REDIS_URL);
cleanups.push(async () => redis.disconnect());
let sql: Sql | null = null;
cleanups.push(async () => {
  await sql?.end({ timeout: 1 });
});
const fixtures = mkdtempSync(join(tmpdir(), 'aula-bench-cluster-'));
cleanups.push(async () => rmSync(fixtures, { recursive: true, force: true }));

const nodeEnv = {
  AULA_ENV: 'production',
  AULA_HOST: '127.0.0.1',
  AULA_PORT: '0',
  AULA_DATABASE_URL: dbUrl.toString(),
  AULA_DATABASE_POOL: '10',
  AULA_REDIS_URL: REDIS_URL,
  AULA_REDIS_PREFIX: prefix,
  AULA_SECRET_KEY: randomBytes(32).toString('base64url'),
  AULA_LOG_LEVEL: 'warn',
  // these scenarios measure the control plane: no mediasoup workers
  AULA_MEDIA_WORKERS: '0',
};

const nodes: RpcChild<NodeInfo>[] = [];
async function startNodeChild(name: string, core: number | null): Promise<RpcChild<NodeInfo>> {
  const m = await startRpcChild<NodeInfo>(name, NODE, nodeEnv, { core: pin ? core : null, nodeArgs: ['--expose-gc'] });
  nodes.push(m);
  cleanups.push(() => m.stop());
  sql ??= postgres(dbUrl.toString(), { ...pgOptions, max: 2 }) as unknown as Sql;
  return m;
}

const placement = () => readPlacement(redis, sql!, prefix);
async function waitSettled(ms: RpcChild<NodeInfo>[], timeoutMs = 20_000) {
  const ids = ms.map((m) => m.info.nodeId).sort();
  const desired = desiredOwners(ids);
  const until = performance.now() + timeoutMs;
  for (;;) {
    const p = await placement();
    if (p.nodes.map((m) => m.id).sort().join() === ids.join() && p.shards.every((s) => s.owner === desired[s.shard])) return p;
    if (performance.now() > until) throw new Error('the placement did not settle');
    await sleep(50);
  }
}

const results: Record<string, unknown> = {};
const lines: string[] = [];
// with --json stdout carries the results alone; the report goes to stderr
if (opt.json) console.log = console.error.bind(console);
const say = (s: string) => {
  console.log(s);
  lines.push(s);
};

// ---- memory per idle meeting actor, connections per process (one node alone) -------------------

async function singleNodeParts(): Promise<void> {
  const m = await startNodeChild('solo', 0);
  const fx = await m.call<{ orgId: string; hostUserId: string; studentUserId: string }>('setup');
  if (parts.has('memory')) {
    const base = await m.call<Memory>('memory');
    if (!base.gc) throw new Error('the node has no gc(): run it with --expose-gc');
    say(`memory: loading ${actorCount} meeting actors (created through the service; each actor is made by its INIT)`);
    const created = await m.call<{ ids: string[]; ms: number }>('createMeetings', { ...fx, count: actorCount, concurrency: 32 });
    await m.call('settle', { expect: actorCount });
    const loaded = await m.call<Memory>('memory');
    const passivated = await m.call<number>('passivate');
    const empty = await m.call<Memory>('memory');
    const touched = await m.call<{ ms: number; loaded: number }>('touch', { ids: created.ids, concurrency: 32 });
    const reloaded = await m.call<Memory>('memory');
    await m.call('passivate');
    const emptyAgain = await m.call<Memory>('memory');
    const per = (a: Memory, b: Memory, k: keyof Memory) => ((a[k] as number) - (b[k] as number)) / actorCount;
    // Heap: the same node with the actors loaded and with them passivated (after a full gc each time).
    // RSS: V8 keeps the pages it grew into after a passivation, so RSS is compared with the node before any actor.
    const r = {
      actors: actorCount,
      createMs: Math.round(created.ms),
      rehydrateMs: Math.round(touched.ms),
      loadedActors: loaded.actors,
      rehydratedActors: touched.loaded,
      passivated,
      heapPerActor: per(loaded, empty, 'heapUsed'),
      heapPerRehydratedActor: per(reloaded, emptyAgain, 'heapUsed'),
      rssPerActor: per(loaded, base, 'rss'),
      snapshots: { base, loaded, empty, reloaded, emptyAgain },
    };
    results.memory = r;
    say(
      `memory: ${loaded.actors} idle meeting actors (created in ${(created.ms / 1000).toFixed(1)} s): heap ${mib(loaded.heapUsed)} loaded vs ${mib(empty.heapUsed)} passivated = ${kib(r.heapPerActor)} per actor; ` +
        `rehydrated from their snapshots (${(touched.ms / 1000).toFixed(1)} s): ${kib(r.heapPerRehydratedActor)} per actor; RSS ${mib(base.rss)} before any actor, ${mib(loaded.rss)} with them = ${kib(r.rssPerActor)} per actor`,
    );
  }
  if (parts.has('connections')) {
    const file = join(fixtures, 'media-tokens.jsonl');
    say(`connections: minting and exchanging ${connCount} room tokens (${perMeeting} per meeting)`);
    await m.call('tokens', { ...fx, count: connCount, perMeeting, file });
    const tokens = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { mediaUrl: string; mediaToken: string });
    if (pin) spawnSync('taskset', ['-a', '-pc', '1', String(process.pid)]);
    const base = await m.call<Memory>('memory');
    const steps = [1000, 2500, 5000, 10_000, 15_000, 20_000].filter((s) => s < connCount).concat(connCount);
    const sockets: WebSocket[] = [];
    cleanups.push(async () => {
      for (const s of sockets) s.terminate();
    });
    let failed = 0;
    const errors: Record<string, number> = {};
    const rows: { connections: number; held: number; heapUsed: number; rss: number; heapPerConn: number; rssPerConn: number; openMs: number }[] = [];
    let next = 0;
    for (const step of steps) {
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: 200 }, async () => {
          while (next < step) {
            const tk = tokens[next++]!;
            try {
              sockets.push(await openRoomSocket(tk.mediaUrl, tk.mediaToken));
            } catch (err) {
              failed++;
              const k = (err as Error).message.slice(0, 80);
              errors[k] = (errors[k] ?? 0) + 1;
            }
          }
        }),
      );
      const openMs = performance.now() - t0;
      const mem = await m.call<Memory>('memory');
      const held = mem.connections;
      rows.push({ connections: step, held, heapUsed: mem.heapUsed, rss: mem.rss, heapPerConn: (mem.heapUsed - base.heapUsed) / held, rssPerConn: (mem.rss - base.rss) / held, openMs });
      say(`connections: ${held} held (${failed} failed): heap ${mib(mem.heapUsed)}, RSS ${mib(mem.rss)}; ${kib((mem.heapUsed - base.heapUsed) / held)} heap and ${kib((mem.rss - base.rss) / held)} RSS per connection; opened in ${Math.round(openMs)} ms`);
    }
    // ping round trips while it holds them all: one at a time, on random sockets (the gateway answers without the actor)
    const rtt: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const ws = sockets[Math.floor(Math.random() * sockets.length)]!;
      const t0 = performance.now();
      await new Promise<void>((resolve) => {
        const on = (d: WebSocket.RawData) => {
          const msg = JSON.parse(String(d));
          if (msg.type === 'ack' && msg.id === `p${i}`) {
            ws.off('message', on);
            resolve();
          }
        };
        ws.on('message', on);
        ws.send(JSON.stringify({ type: 'ping', id: `p${i}` }));
      });
      rtt.push((performance.now() - t0) * 1000);
    }
    const last = rows.at(-1)!;
    results.connections = { perMeeting, failed, errors, base, steps: rows, pingUs: { p50: pct(rtt, 50), p99: pct(rtt, 99) } };
    say(`connections: ping round trip with ${last.held} held: p50 ${(pct(rtt, 50) / 1000).toFixed(2)} ms, p99 ${(pct(rtt, 99) / 1000).toFixed(2)} ms`);
    for (const s of sockets) s.terminate();
    sockets.length = 0;
    if (pin) spawnSync('taskset', ['-a', '-pc', '0-' + String(availableParallelism() - 1), String(process.pid)]);
  }
  await m.stop();
  nodes.splice(nodes.indexOf(m), 1);
}

function openRoomSocket(mediaUrl: string, token: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${mediaUrl}?token=${encodeURIComponent(token)}&device=web`);
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error('no joined in 30 s'));
    }, 30_000);
    ws.on('message', (d) => {
      const m = JSON.parse(String(d));
      if (m.type === 'joined') {
        clearTimeout(timer);
        ws.removeAllListeners('message');
        ws.on('message', () => {});
        resolve(ws);
      } else if (m.type === 'error') {
        clearTimeout(timer);
        reject(new Error(`refused: ${m.error?.code}`));
      }
    });
    ws.once('unexpected-response', (_q, res) => {
      clearTimeout(timer);
      reject(new Error(`upgrade refused: ${res.statusCode}`));
    });
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

// ---- latency and failover (three nodes) -------------------------------------------------------

async function clusterParts(): Promise<void> {
  const a = await startNodeChild('a', 0);
  const b = await startNodeChild('b', 1);
  let c = await startNodeChild('c', 1);
  const fx = await a.call<{ orgId: string; hostUserId: string }>('setup');
  let p = await waitSettled([a, b, c]);

  /** A meeting actor (LIVE, with a host) on a shard `owner` holds. */
  const liveMeetingOn = async (owner: string, tag: string): Promise<string> => {
    for (;;) {
      const { ids } = await a.call<{ ids: string[] }>('createMeetings', { ...fx, count: 8 });
      const id = ids.find((i) => p.shards[shardOf(`meeting:${i}`)]!.owner === owner);
      if (!id) continue;
      await a.call('live', { meetingId: id, participantId: `par_bench_${tag}`, userId: fx.hostUserId });
      return id;
    }
  };
  const echoOn = (owner: string, tag: string): string => {
    for (let i = 0; ; i++) if (p.shards[shardOf(`bench:${tag}-${i}`)]!.owner === owner) return `bench:${tag}-${i}`;
  };

  if (parts.has('latency')) {
    // a hand raised and lowered in turn (askLoop flips `raise`): a real transition and its commit every time
    const mute = (tag: string) => ({ type: 'HAND', participantId: `par_bench_${tag}`, by: `par_bench_${tag}`, raise: true });
    const cases = [
      { name: 'echo, in-process', actorId: echoOn(a.info.nodeId, 'local'), event: { type: 'PING' } },
      { name: 'echo, over Redis', actorId: echoOn(b.info.nodeId, 'remote'), event: { type: 'PING' } },
      { name: 'meeting, in-process', actorId: `meeting:${await liveMeetingOn(a.info.nodeId, 'local')}`, event: mute('local') },
      { name: 'meeting, over Redis', actorId: `meeting:${await liveMeetingOn(b.info.nodeId, 'remote')}`, event: mute('remote') },
    ];
    for (const k of cases) await a.call('askLoop', { actorId: k.actorId, event: k.event, n: 200 });
    const samples = new Map<string, number[]>(cases.map((k) => [k.name, []]));
    const rounds = 4;
    for (let r = 0; r < rounds; r++) {
      for (const k of cases) samples.get(k.name)!.push(...(await a.call<number[]>('askLoop', { actorId: k.actorId, event: k.event, n: Math.ceil(asks / rounds) })));
    }
    const rows = cases.map((k) => {
      const us = samples.get(k.name)!;
      return { case: k.name, n: us.length, p50: pct(us, 50), p90: pct(us, 90), p99: pct(us, 99), mean: mean(us) };
    });
    results.latency = { asksPerCase: asks, rounds, rows };
    say('latency (asks from node a, one at a time, interleaved in 4 rounds):');
    say('| case | asks | p50 | p90 | p99 | mean |');
    say('|---|---:|---:|---:|---:|---:|');
    for (const r of rows) say(`| ${r.case} | ${r.n} | ${(r.p50 / 1000).toFixed(3)} ms | ${(r.p90 / 1000).toFixed(3)} ms | ${(r.p99 / 1000).toFixed(3)} ms | ${(r.mean / 1000).toFixed(3)} ms |`);
    const by = (n: string) => rows.find((r) => r.case === n)!;
    say(`latency: the Redis hop adds ${((by('echo, over Redis').p50 - by('echo, in-process').p50) / 1000).toFixed(3)} ms at p50 (echo), ${((by('meeting, over Redis').p50 - by('meeting, in-process').p50) / 1000).toFixed(3)} ms (meeting)`);
  }

  if (parts.has('failover')) {
    const rounds: Record<string, number | string>[] = [];
    for (let k = 1; k <= kills; k++) {
      p = await waitSettled([a, b, c]);
      const victimShards = p.shards.filter((s) => s.owner === c.info.nodeId);
      const echo = echoOn(c.info.nodeId, `victim${k}`);
      const meetingId = await liveMeetingOn(c.info.nodeId, `victim${k}`);
      const before = p;
      const survivors = new Set([a.info.nodeId, b.info.nodeId]);
      const t0 = Date.now();
      const reaped = c.exited.then(() => Date.now() - t0);
      c.proc.kill('SIGKILL');
      const owned = (async () => {
        for (;;) {
          const q = await placement();
          if (victimShards.every((v) => survivors.has(q.shards[v.shard]!.owner ?? '') && q.shards[v.shard]!.epoch > before.shards[v.shard]!.epoch)) return Date.now() - t0;
          await sleep(10);
        }
      })();
      const [ownedMs, reapedMs, echoAns, meetingAns] = await Promise.all([
        owned,
        reaped,
        a.call<{ ms: number; attempts: number; errors: Record<string, number> }>('untilAnswer', { actorId: echo, event: { type: 'PING' }, since: t0 }),
        a.call<{ ms: number; attempts: number; errors: Record<string, number> }>('untilAnswer', { actorId: `meeting:${meetingId}`, event: { type: 'HAND', participantId: `par_bench_victim${k}`, by: `par_bench_victim${k}`, raise: true }, since: t0 }),
      ]);
      rounds.push({ round: k, shards: victimShards.length, reapedMs, ownedMs, echoMs: echoAns.ms, meetingMs: meetingAns.ms, echoErrors: JSON.stringify(echoAns.errors), meetingErrors: JSON.stringify(meetingAns.errors) });
      say(`failover ${k}: kill -9 of a node with ${victimShards.length} shards (reaped ${reapedMs} ms): all owned again ${ownedMs} ms, echo actor answered ${echoAns.ms} ms, LIVE meeting actor answered ${meetingAns.ms} ms`);
      nodes.splice(nodes.indexOf(c), 1);
      c = await startNodeChild('c', 1);
    }
    const col = (k: string) => rounds.map((r) => r[k] as number);
    results.failover = { rounds, medianOwnedMs: median(col('ownedMs')), maxOwnedMs: Math.max(...col('ownedMs')), medianMeetingMs: median(col('meetingMs')), maxMeetingMs: Math.max(...col('meetingMs')) };
    say(`failover: median ${median(col('ownedMs'))} ms until the shards were owned again (max ${Math.max(...col('ownedMs'))}), median ${median(col('meetingMs'))} ms until the meeting actor answered (max ${Math.max(...col('meetingMs'))})`);
  }
}

const started = new Date();
try {
  console.log(`cluster benchmarks: ${[...parts].join(', ')}; pinned: ${pin ? 'yes' : 'no'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  if (parts.has('memory') || parts.has('connections')) await singleNodeParts();
  if (parts.has('latency') || parts.has('failover')) await clusterParts();
  const warnings = nodes.flatMap((m) => m.otherLines().map((l) => `${m.name}: ${l}`));
  const out = opt.out ?? join(here, 'results', `cluster-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  const saved = {
    scenario: 'cluster',
    startedAt: started.toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, pinned: pin, loadAverageAtStart: loadavg() },
    options: { parts: [...parts], asks, kills, actors: actorCount, connections: connCount, perMeeting },
    results,
    summary: lines,
    nodeLogLines: warnings.slice(-200),
  };
  writeFileSync(out, JSON.stringify(saved, null, 2) + '\n');
  if (opt.json) process.stdout.write(JSON.stringify(saved) + '\n');
  console.log(`results: ${out}`);
} catch (err) {
  console.error((err as Error).stack ?? err);
  process.exitCode = 1;
} finally {
  await cleanup();
}
