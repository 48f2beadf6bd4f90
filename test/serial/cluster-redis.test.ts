import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { pgOptions } from '../../src/platform/db/index.ts';
import t, { type Test } from 'tap';
import { SHARD_COUNT, shardOf, type Cluster } from '../../src/platform/cluster/cluster.ts';
import { assertEpoch, FencedError } from '../../src/platform/cluster/fencing.ts';
import { desiredOwners, readPlacement } from '../../src/platform/cluster/placement.ts';
import { RedisCluster, type RedisClusterOptions } from '../../src/platform/cluster/redis-cluster.ts';
import type { Sql } from '../../src/platform/db/index.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { AppError } from '../../src/core/errors.ts';
import { aula } from '../helpers/cli.ts';
import { createTestDatabase, REDIS_URL } from '../helpers/node.ts';
import { clusterContract } from '../cluster/contract.ts';
import { startProxy } from '../cluster/fixtures/tcp-proxy.ts';

const dbUrl = await createTestDatabase(t);
const sql = postgres(dbUrl, { max: 8, ...pgOptions }) as unknown as Sql;
t.teardown(() => sql.end());
await migrate(sql);
const admin = new Redis(REDIS_URL);
t.teardown(() => admin.disconnect());

const newPrefix = () => `aulatest:${randomBytes(4).toString('hex')}:`;
const prefixes = new WeakMap<Cluster, string>();

type NodeOpts = Partial<Omit<RedisClusterOptions, 'redis' | 'sql' | 'prefix'>> & { redisUrl?: string };

/** A node with connections of its own (as if in its own process), stopped at teardown. */
function node(t: Test, prefix: string, opts: NodeOpts = {}): RedisCluster {
  const { redisUrl, ...rest } = opts;
  const template = new Redis(redisUrl ?? REDIS_URL, { lazyConnect: true });
  const c = new RedisCluster({ redis: template, sql, prefix, ...rest });
  prefixes.set(c, prefix);
  t.teardown(() => c.stop());
  return c;
}

async function startAll(nodes: RedisCluster[], handler?: (c: RedisCluster) => Parameters<Cluster['start']>[0]): Promise<void> {
  await Promise.all(nodes.map((m) => m.start(handler ? handler(m) : async (msg, shard, epoch) => ({ nodeId: m.nodeId, actorId: msg.actorId, shard, epoch }))));
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<number> {
  const t0 = performance.now();
  while (!(await cond())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return performance.now() - t0;
}

/** Every shard held by exactly one of `nodes`, the one rendezvous hashing picks. */
function settled(nodes: RedisCluster[]): boolean {
  const desired = desiredOwners(nodes.map((m) => m.nodeId));
  for (let shard = 0; shard < SHARD_COUNT; shard++) {
    const holders = nodes.filter((m) => m.owned().has(shard));
    if (holders.length !== 1 || holders[0]!.nodeId !== desired[shard]) return false;
  }
  return true;
}

function ownerOf(nodes: RedisCluster[], shard: number): RedisCluster | undefined {
  return nodes.find((m) => m.owned().has(shard));
}

/** An actor id whose shard `m` owns. */
function actorOn(m: RedisCluster, tag: string): string {
  for (let i = 0; ; i++) {
    const id = `meeting:${tag}-${i}`;
    if (m.owned().has(shardOf(id))) return id;
  }
}

t.test('RedisCluster contract', async (t) => {
  clusterContract(t, {
    sql,
    async create(t) {
      return node(t, newPrefix());
    },
    readPlacement: (c) => readPlacement(admin, sql, prefixes.get(c)!),
  });
});

t.test('three nodes spread the shards, one owner each, and placement shows it', async (t) => {
  const prefix = newPrefix();
  const ms = ['node-a', 'node-b', 'node-c'].map((nodeId) => node(t, prefix, { nodeId }));
  await startAll(ms);
  const took = await waitFor('three nodes to settle', () => settled(ms));
  t.comment(`settled in ${Math.round(took)} ms`);
  const counts = ms.map((m) => m.owned().size);
  t.equal(counts.reduce((a, b) => a + b, 0), SHARD_COUNT);
  t.ok(counts.every((n) => n >= 12 && n <= 30), `roughly even: ${counts.join(', ')}`);
  const p = await ms[0]!.placement();
  t.same(p.nodes.map((m) => m.id).sort(), ['node-a', 'node-b', 'node-c']);
  t.same(p.shards.map((s) => s.owner), p.shards.map((s) => ownerOf(ms, s.shard)!.nodeId), 'the lease holders');
  t.same(p.shards.map((s) => s.epoch), p.shards.map((s) => ownerOf(ms, s.shard)!.owned().get(s.shard)), 'the epochs');
});

t.test('a fourth node takes only the shards it wins (rendezvous hashing)', async (t) => {
  const prefix = newPrefix();
  const ms = ['node-a', 'node-b', 'node-c'].map((nodeId) => node(t, prefix, { nodeId }));
  await startAll(ms);
  await waitFor('three nodes to settle', () => settled(ms));
  const before = Array.from({ length: SHARD_COUNT }, (_, s) => ownerOf(ms, s)!.nodeId);
  const lost: string[] = [];
  for (const m of ms) m.on('lost', (s) => lost.push(`${m.nodeId}:${s}`));
  const d = node(t, prefix, { nodeId: 'node-d' });
  ms.push(d);
  await startAll([d]);
  const took = await waitFor('four nodes to settle', () => settled(ms));
  const after = Array.from({ length: SHARD_COUNT }, (_, s) => ownerOf(ms, s)!.nodeId);
  const moved = after.map((o, s) => (o !== before[s] ? s : -1)).filter((s) => s >= 0);
  t.comment(`${moved.length} shards moved in ${Math.round(took)} ms`);
  t.ok(moved.every((s) => after[s] === 'node-d'), 'every shard that moved went to the new node');
  t.equal(moved.length, d.owned().size);
  t.ok(moved.length >= 8 && moved.length <= 26, `about a quarter moved: ${moved.length}`);
  t.same(lost, [], 'hand-overs are graceful, nothing is lost');
});

t.test('ask() and send() reach an actor owned by another node', async (t) => {
  const prefix = newPrefix();
  const [a, b] = [node(t, prefix), node(t, prefix)];
  const seen: { on: string; actorId: string; shard: number; epoch: number }[] = [];
  await startAll([a, b], (m) => async (msg, shard, epoch) => {
    seen.push({ on: m.nodeId, actorId: msg.actorId, shard, epoch });
    if (msg.event.op === 'fail') throw new AppError('invalid_state', { details: { status: 'ENDED' } });
    if (msg.event.op === 'crash') throw new Error('boom');
    return { on: m.nodeId, shard, epoch, echo: msg.event };
  });
  await waitFor('two nodes to settle', () => settled([a, b]));
  const onB = actorOn(b, 'remote');
  const shard = shardOf(onB);
  t.same(await a.ask(onB, { op: 'echo', x: [1, 2] }), { on: b.nodeId, shard, epoch: b.owned().get(shard), echo: { op: 'echo', x: [1, 2] } });
  await t.rejects(a.ask(onB, { op: 'fail' }), { name: 'AppError', code: 'invalid_state', details: { status: 'ENDED' } }, 'AppError code and details cross nodes');
  await t.rejects(a.ask(onB, { op: 'crash' }), { code: 'internal_error' }, 'other errors become internal_error');
  seen.length = 0;
  await a.send(onB, { op: 'echo' });
  t.same(seen, [{ on: b.nodeId, actorId: onB, shard, epoch: b.owned().get(shard) }], 'send() resolved after the owner took it');

  const t0 = performance.now();
  for (let i = 0; i < 200; i++) await a.ask(onB, { op: 'echo', i });
  t.comment(`remote ask round trip: ${((performance.now() - t0) / 200).toFixed(2)} ms`);
});

t.test('stop({ drain: true }) hands every shard over before the others take them', async (t) => {
  const prefix = newPrefix();
  const ms = [node(t, prefix), node(t, prefix), node(t, prefix)];
  await startAll(ms);
  await waitFor('three nodes to settle', () => settled(ms));
  const [a, b, c] = ms as [RedisCluster, RedisCluster, RedisCluster];
  const cShards = new Map(c.owned());
  const passivated = new Map<number, number>();
  const acquiredAt = new Map<number, { at: number; epoch: number }>();
  c.on('releasing', async (s) => {
    await new Promise((r) => setTimeout(r, 20));
    passivated.set(s, performance.now());
  });
  for (const m of [a, b]) m.on('acquired', (s, epoch) => acquiredAt.set(s, { at: performance.now(), epoch }));
  const t0 = performance.now();
  await c.stop({ drain: true });
  t.equal(c.owned().size, 0);
  const took = await waitFor('the others to take over', () => settled([a, b]), 5000);
  t.comment(`drained ${cShards.size} shards; all owned again ${Math.round(performance.now() - t0)} ms after stop() began (${Math.round(took)} ms after it returned)`);
  const shards = [...cShards.keys()];
  t.same(shards.filter((s) => !(passivated.has(s) && acquiredAt.has(s) && acquiredAt.get(s)!.at > passivated.get(s)!)), [], 'each shard passivated before it was taken');
  t.same(shards.filter((s) => !(acquiredAt.get(s)!.epoch > cShards.get(s)!)), [], 'each with a higher epoch');
  const p = await a.placement();
  t.equal(p.nodes.length, 2);
});

t.test('a node cut off from Redis steps down before its leases expire, and its writes are fenced', async (t) => {
  // production timings: the point is the margin between stepping down and the lease expiring
  const prefix = newPrefix();
  const proxy = await startProxy(Number(new URL(REDIS_URL).port || 6379));
  t.teardown(() => proxy.close());
  const [a, b] = [node(t, prefix), node(t, prefix)];
  const c = node(t, prefix, { redisUrl: `redis://127.0.0.1:${proxy.port}` });
  await startAll([a, b, c]);
  await waitFor('three nodes to settle', () => settled([a, b, c]));
  const cShards = new Map(c.owned());

  const lostAt = new Map<number, number>();
  const leaseAtLost = new Map<number, Promise<[string | null, number]>>();
  c.on('lost', (s) => {
    lostAt.set(s, performance.now());
    leaseAtLost.set(
      s,
      admin
        .multi()
        .get(`${prefix}shard:${s}`)
        .pttl(`${prefix}shard:${s}`)
        .exec()
        .then((r) => [r![0]![1] as string | null, r![1]![1] as number]),
    );
  });
  const takenAt = new Map<number, number>();
  for (const m of [a, b]) m.on('acquired', (s) => takenAt.set(s, performance.now()));

  // a host that ignores 'lost' and keeps writing with the epochs it had
  await sql`create table fenced_writes (shard int, epoch bigint)`;
  const attempts: { shard: number; start: number; ok: boolean }[] = [];
  let writing = true;
  const rogue = (async () => {
    const targets = [...cShards].slice(0, 4);
    while (writing) {
      await Promise.all(
        targets.map(async ([shard, epoch]) => {
          const start = performance.now();
          try {
            await sql.begin(async (tx) => {
              await assertEpoch(tx, shard, epoch);
              await tx`insert into fenced_writes values (${shard}, ${epoch})`;
            });
            attempts.push({ shard, start, ok: true });
          } catch (err) {
            if (!(err instanceof FencedError)) throw err;
            attempts.push({ shard, start, ok: false });
          }
        }),
      );
      await new Promise((r) => setTimeout(r, 20));
    }
  })();

  const cutAt = performance.now();
  proxy.cut();
  await waitFor('the others to take the cut node\'s shards', () => [...cShards.keys()].every((s) => takenAt.has(s)), 8000);
  await new Promise((r) => setTimeout(r, 100));
  writing = false;
  await rogue;

  t.same([...lostAt.keys()].sort((x, y) => x - y), [...cShards.keys()].sort((x, y) => x - y), 'lost emitted for every shard it held');
  t.equal(c.owned().size, 0);
  const leases = await Promise.all([...cShards.keys()].map((s) => leaseAtLost.get(s)!));
  t.ok(leases.every(([holder, pttl]) => holder === c.nodeId && pttl > 0), 'every lease was still live in Redis when \'lost\' fired');
  const worstMargin = Math.min(...leases.map(([, pttl]) => pttl));
  t.ok([...cShards.keys()].every((s) => lostAt.get(s)! < takenAt.get(s)!), 'lost before taken over');
  const stepDown = Math.max(...[...lostAt.values()].map((x) => x - cutAt));
  const failover = Math.max(...[...takenAt.values()].map((x) => x - cutAt));
  t.comment(`cut -> last 'lost' ${Math.round(stepDown)} ms (lease margin at least ${worstMargin} ms); cut -> all taken over ${Math.round(failover)} ms`);
  t.ok(stepDown < 2300, 'stepped down within stepDownMs of the last renewal');
  t.ok(failover < 5000, 'taken over within 5 s');

  const late = attempts.filter((x) => x.ok && x.start > takenAt.get(x.shard)!);
  t.same(late, [], 'no write that began after the takeover committed');
  t.ok(attempts.some((x) => !x.ok), `stale writes refused (${attempts.filter((x) => !x.ok).length} of ${attempts.length})`);
  const [row] = await sql<{ n: string }[]>`select count(*) as n from fenced_writes`;
  t.equal(Number(row!.n), attempts.filter((x) => x.ok).length, 'only the accepted writes are in the table');
});

t.test('a write fenced by a newer epoch makes the node step down and retake the shard; the ask retries', async (t) => {
  const prefix = newPrefix();
  const m = node(t, prefix);
  const lost: number[] = [];
  const acquired: [number, number][] = [];
  m.on('lost', (s) => lost.push(s));
  m.on('acquired', (s, e) => acquired.push([s, e]));
  await m.start(async (_msg, shard, epoch) => {
    await sql.begin((tx) => assertEpoch(tx, shard, epoch));
    return epoch;
  });
  const shard = shardOf('meeting:bumped');
  const epoch = m.owned().get(shard)!;
  acquired.length = 0;
  // someone else fenced the shard behind this node's back (Redis lost its data, or a second cluster on the same database)
  await sql`update shards set epoch = epoch + 1 where id = ${shard}`;
  const answeredWith = await m.ask<number>('meeting:bumped', { op: 'x' });
  t.same(lost, [shard], 'the fenced write made it give the shard up');
  t.same(acquired, [[shard, epoch + 2]], 'and take it again with a fresh epoch');
  t.equal(answeredWith, epoch + 2, 'the ask was retried under the new epoch');
});

t.test('a node whose connections are killed reconnects and keeps serving', async (t) => {
  const prefix = newPrefix();
  const [a, b] = [node(t, prefix, { nodeId: `kill-a-${randomBytes(2).toString('hex')}` }), node(t, prefix)];
  await startAll([a, b]);
  await waitFor('two nodes to settle', () => settled([a, b]));
  const list = await admin.client('LIST') as string;
  const ids = list
    .split('\n')
    .filter((l) => l.includes(` name=${prefix}cluster:${a.nodeId}:`))
    .map((l) => /\bid=(\d+)/.exec(l)![1]!);
  t.equal(ids.length, 2, 'the node has a command and a subscriber connection');
  for (const id of ids) await admin.client('KILL', 'ID', id);
  const onA = actorOn(a, 'killed');
  t.match(await b.ask(onA, { op: 'echo' }, { timeoutMs: 3000 }), { nodeId: a.nodeId }, 'reachable again');
  t.ok(settled([a, b]), 'no shard moved');
});

t.test('ask() rejects with ActorUnavailableError when the owner never replies or there is none', async (t) => {
  const prefix = newPrefix();
  const [a, b] = [node(t, prefix), node(t, prefix)];
  await startAll([a, b], () => () => new Promise(() => {}));
  await waitFor('two nodes to settle', () => settled([a, b]));
  const onB = actorOn(b, 'silent');
  let t0 = performance.now();
  await t.rejects(a.ask(onB, { op: 'x' }, { timeoutMs: 300 }), { name: 'ActorUnavailableError', code: 'actor_unavailable', details: { owner: b.nodeId } });
  t.ok(performance.now() - t0 >= 290, 'at the deadline');

  // a lease held by a node that is not there (crashed before its lease ran out)
  const ghostPrefix = newPrefix();
  await admin.set(`${ghostPrefix}shard:${shardOf('meeting:ghost')}`, 'ghost', 'PX', 10_000);
  const lone = node(t, ghostPrefix, { askTimeoutMs: 300 });
  await startAll([lone]);
  t.equal(lone.owned().size, SHARD_COUNT - 1, 'the ghost\'s shard is not taken while its lease lives');
  t0 = performance.now();
  await t.rejects(lone.ask('meeting:ghost', { op: 'x' }, { timeoutMs: 300 }), { name: 'ActorUnavailableError', details: { owner: 'ghost' } });
  t.ok(performance.now() - t0 >= 290, 'retried until the deadline');
  await t.rejects(lone.send('meeting:ghost', { op: 'x' }), { code: 'actor_unavailable' }, 'send() too (after the node\'s default timeout)');
});

t.test('kill -9 of a node process: its shards are owned again within 5 s', async (t) => {
  const prefix = newPrefix();
  const env = { AULA_DATABASE_URL: dbUrl, AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: prefix };
  const script = fileURLToPath(new URL('../cluster/fixtures/node.ts', import.meta.url));
  const cwd = fileURLToPath(new URL('../..', import.meta.url));
  const ids = ['proc-a', 'proc-b', 'proc-c'];
  const procs = await Promise.all(
    ids.map(
      (nodeId) =>
        new Promise<{ nodeId: string; proc: ReturnType<typeof spawn>; lines: Record<string, unknown>[] }>((resolve, reject) => {
          const proc = spawn(process.execPath, ['--import', 'tsx', script], { cwd, env: { ...process.env, ...env, NODE_ID: nodeId }, stdio: ['ignore', 'pipe', 'pipe'] });
          t.teardown(() => {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
          });
          let stderr = '';
          proc.stderr!.on('data', (d) => (stderr += d));
          proc.once('exit', (code) => reject(new Error(`${nodeId} exited with ${code}: ${stderr}`)));
          const lines: Record<string, unknown>[] = [];
          createInterface({ input: proc.stdout! }).on('line', (l) => {
            const o = JSON.parse(l) as Record<string, unknown>;
            lines.push(o);
            if (o.event === 'ready') resolve({ nodeId, proc, lines });
          });
        }),
    ),
  );
  const desired = desiredOwners(ids);
  await waitFor('the processes to settle', async () => (await readPlacement(admin, sql, prefix)).shards.every((s) => s.owner === desired[s.shard]));

  const status = await aula(['cluster', 'status', '--json'], env);
  t.equal(status.code, 0, status.stderr);
  const shown = JSON.parse(status.stdout) as { nodes: { id: string; pid: number }[]; shards: { shard: number; owner: string }[] };
  t.same(shown.nodes.map((m) => m.id).sort(), ids);
  t.same(shown.nodes.map((m) => m.pid).sort(), procs.map((p) => p.proc.pid).sort());
  t.ok(shown.shards.every((s) => s.owner === desired[s.shard]), 'aula cluster status --json shows the placement');
  const text = await aula(['cluster', 'status'], env);
  t.equal(text.code, 0);
  t.match(text.stdout, /3 nodes/);
  for (const id of ids) t.match(text.stdout, id);

  const victim = procs[1]!;
  const before = await readPlacement(admin, sql, prefix);
  const victimShards = before.shards.filter((s) => s.owner === victim.nodeId);
  victim.proc.removeAllListeners('exit');
  const killedAt = performance.now();
  victim.proc.kill('SIGKILL');
  const survivors = new Set([ids[0], ids[2]]);
  await waitFor(
    'the victim\'s shards to be owned again',
    async () => {
      const p = await readPlacement(admin, sql, prefix);
      return victimShards.every((v) => {
        const s = p.shards[v.shard]!;
        return survivors.has(s.owner ?? '') && s.epoch > v.epoch;
      });
    },
    8000,
  );
  const failover = performance.now() - killedAt;
  t.comment(`kill -9 -> ${victimShards.length} shards owned again (lease and new epoch) in ${Math.round(failover)} ms`);
  t.ok(failover < 5000, `within 5 s (${Math.round(failover)} ms)`);
  t.ok(
    victimShards.every((v) => procs.some((p) => p !== victim && p.lines.some((l) => l.event === 'acquired' && l.shard === v.shard))),
    'the survivors report the acquisitions',
  );

  for (const p of procs) {
    if (p === victim) continue;
    p.proc.removeAllListeners('exit');
    const exited = new Promise((r) => p.proc.once('exit', r));
    p.proc.kill('SIGTERM');
    await exited;
  }
});
