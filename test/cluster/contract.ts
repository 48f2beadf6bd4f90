import type { Test } from 'tap';
import { SHARD_COUNT, shardOf, type Cluster, type Placement } from '../../src/platform/cluster/cluster.ts';
import { acquireEpoch, assertEpoch, FencedError } from '../../src/platform/cluster/fencing.ts';
import type { Sql } from '../../src/platform/db/index.ts';
import { AppError } from '../../src/core/errors.ts';

export interface ContractEnv {
  sql: Sql;
  /** A new, not yet started node of a cluster of its own (fresh Redis prefix), stopped at teardown. */
  create(t: Test): Promise<Cluster>;
  /** The placement as an operator reads it (readPlacement), for the cluster `c` belongs to, even after c stopped. */
  readPlacement(c: Cluster): Promise<Placement>;
}

type Seen = { actorId: string; event: Record<string, unknown>; shard: number; epoch: number };

async function started(t: Test, env: ContractEnv, seen: Seen[] = []): Promise<Cluster> {
  const c = await env.create(t);
  await c.start(async (msg, shard, epoch) => {
    seen.push({ ...msg, shard, epoch });
    const { op } = msg.event;
    if (op === 'echo') return { actorId: msg.actorId, event: msg.event, shard, epoch };
    if (op === 'fail') throw new AppError('meeting_not_found', { details: { id: msg.actorId } });
    if (op === 'hang') return new Promise(() => {});
    return null;
  });
  return c;
}

async function shardRows(sql: Sql) {
  const rows = await sql<{ id: number; epoch: string; owner: string | null }[]>`select id, epoch, owner from shards order by id`;
  return rows.map((r) => ({ id: r.id, epoch: Number(r.epoch), owner: r.owner }));
}

/** The behaviour every Cluster implementation shares; run by local.test.ts and redis.test.ts. */
export function clusterContract(t: Test, env: ContractEnv): void {
  t.test('start() owns every shard with the epoch Postgres handed out', async (t) => {
    const c = await started(t, env);
    const owned = c.owned();
    t.equal(owned.size, SHARD_COUNT);
    const rows = await shardRows(env.sql);
    t.ok(rows.every((r) => r.epoch > 0), 'every epoch > 0');
    t.same(rows.map((r) => owned.get(r.id)), rows.map((r) => r.epoch), 'the epochs are the ones in Postgres');
    t.ok(rows.every((r) => r.owner === c.nodeId), 'Postgres records the owner');
  });

  t.test('ask() reaches the handler with the shard and epoch and returns its value', async (t) => {
    const seen: Seen[] = [];
    const c = await started(t, env, seen);
    for (const actorId of ['meeting:m-1', 'waiting-room:w-2', 'webhook-endpoint:e-3', 'größe:ü']) {
      const shard = shardOf(actorId);
      const reply = await c.ask<{ actorId: string; shard: number; epoch: number; event: unknown }>(actorId, { op: 'echo', n: 1 });
      t.same(reply, { actorId, event: { op: 'echo', n: 1 }, shard, epoch: c.owned().get(shard) });
    }
    t.equal(seen.length, 4);
  });

  t.test('send() resolves once the handler has the event', async (t) => {
    const seen: Seen[] = [];
    const c = await started(t, env, seen);
    await c.send('meeting:s-1', { op: 'noop', k: 'v' });
    t.equal(seen.length, 1);
    t.same(seen[0], { actorId: 'meeting:s-1', event: { op: 'noop', k: 'v' }, shard: shardOf('meeting:s-1'), epoch: c.owned().get(shardOf('meeting:s-1')) });
    await c.send('meeting:s-1', { op: 'fail' });
    t.equal(seen.length, 2, 'a failing handler does not fail send()');
  });

  t.test('ask() rejects with the handler\'s AppError code and details', async (t) => {
    const c = await started(t, env);
    const err = await c.ask('meeting:nope', { op: 'fail' }).then(
      () => null,
      (e: unknown) => e,
    );
    t.ok(err instanceof AppError, 'an AppError');
    t.equal((err as AppError).code, 'meeting_not_found');
    t.same((err as AppError).details, { id: 'meeting:nope' });
  });

  t.test('ask() rejects with ActorUnavailableError when the handler never answers', async (t) => {
    const c = await started(t, env);
    const t0 = performance.now();
    const err = await c.ask('meeting:slow', { op: 'hang' }, { timeoutMs: 200 }).then(
      () => null,
      (e: unknown) => e,
    );
    const took = performance.now() - t0;
    t.ok(err instanceof AppError && err.code === 'actor_unavailable', 'actor_unavailable');
    t.equal((err as Error).name, 'ActorUnavailableError');
    t.ok(took >= 190 && took < 1000, `after the timeout (${Math.round(took)} ms)`);
  });

  t.test('placement() lists the node and every shard with its owner and epoch', async (t) => {
    const c = await started(t, env);
    const p = await c.placement();
    t.same(p.nodes.map((m) => m.id), [c.nodeId]);
    const m = p.nodes[0]!;
    t.equal(m.pid, process.pid);
    t.ok(m.host.length > 0 && !Number.isNaN(Date.parse(m.startedAt)) && m.lastSeenMsAgo >= 0 && m.lastSeenMsAgo < 3000);
    t.same(p.shards.map((s) => s.shard), [...Array(SHARD_COUNT).keys()]);
    t.ok(p.shards.every((s) => s.owner === c.nodeId), 'owner of every shard');
    t.same(p.shards.map((s) => s.epoch), p.shards.map((s) => c.owned().get(s.shard)), 'epoch of every shard');
  });

  t.test('stop() gives every shard up and emits lost; send and ask then refuse', async (t) => {
    const c = await started(t, env);
    const lost: number[] = [];
    c.on('lost', (s) => lost.push(s));
    await c.stop();
    t.equal(c.owned().size, 0);
    t.same(lost.sort((a, b) => a - b), [...Array(SHARD_COUNT).keys()]);
    const rows = await shardRows(env.sql);
    t.ok(rows.every((r) => r.owner === null), 'Postgres records no owner');
    const p = await env.readPlacement(c);
    t.ok(p.shards.every((s) => s.owner === null), 'placement shows no owner');
    t.same(p.nodes, []);
    await t.rejects(c.ask('meeting:x', { op: 'echo' }), { code: 'actor_unavailable' });
    await t.rejects(c.send('meeting:x', { op: 'echo' }), { code: 'actor_unavailable' });
    await c.stop();
  });

  t.test('stop({ drain: true }) awaits the host\'s releasing listeners before giving shards up', async (t) => {
    const c = await started(t, env);
    const released: number[] = [];
    const lost: number[] = [];
    let heldWhilePassivating = 0;
    c.on('releasing', async (s) => {
      await new Promise((r) => setTimeout(r, 5));
      if (c.owned().has(s)) heldWhilePassivating++;
      released.push(s);
    });
    c.on('lost', (s) => lost.push(s));
    await c.stop({ drain: true });
    t.equal(released.length, SHARD_COUNT);
    t.equal(heldWhilePassivating, SHARD_COUNT, 'the epoch is still held while the host passivates');
    t.same(lost, []);
    t.equal(c.owned().size, 0);
    t.ok((await shardRows(env.sql)).every((r) => r.owner === null));
  });

  t.test('every (re)acquisition bumps the epoch and emits acquired', async (t) => {
    const before = await shardRows(env.sql);
    const c = await env.create(t);
    const acquired = new Map<number, number>();
    c.on('acquired', (s, e) => acquired.set(s, e));
    await c.start(async () => null);
    const after = await shardRows(env.sql);
    t.ok(after.every((r) => r.epoch > before[r.id]!.epoch), 'every epoch went up');
    t.same(after.map((r) => acquired.get(r.id)), after.map((r) => r.epoch), 'acquired was emitted with the new epochs');
    await c.stop();
    const again = await env.create(t);
    await again.start(async () => null);
    t.equal(again.owned().size, SHARD_COUNT);
    t.ok([...again.owned()].every(([shard, epoch]) => epoch > after[shard]!.epoch), 'and again on the next start');
    await again.stop();
  });

  t.test('assertEpoch() refuses a stale epoch and holds a takeover until the write commits', async (t) => {
    const c = await started(t, env);
    const shard = shardOf('meeting:fenced');
    const epoch = c.owned().get(shard)!;
    await env.sql`create table if not exists contract_writes (shard int, epoch bigint)`;
    await env.sql.begin(async (tx) => {
      await assertEpoch(tx, shard, epoch);
      await tx`insert into contract_writes values (${shard}, ${epoch})`;
    });

    // a write in progress holds the row: the takeover waits for it instead of slipping in between
    let releaseWrite!: () => void;
    const writeOpen = new Promise<void>((r) => (releaseWrite = r));
    let checked!: () => void;
    const epochChecked = new Promise<void>((r) => (checked = r));
    const write = env.sql.begin(async (tx) => {
      await assertEpoch(tx, shard, epoch);
      checked();
      await writeOpen;
      await tx`insert into contract_writes values (${shard}, ${epoch})`;
    });
    await epochChecked;
    let takenOver = false;
    const takeover = acquireEpoch(env.sql, shard, 'someone-else').then((e) => ((takenOver = true), e));
    await new Promise((r) => setTimeout(r, 100));
    t.notOk(takenOver, 'the epoch bump waits for the open write');
    releaseWrite();
    await write;
    const newEpoch = await takeover;
    t.equal(newEpoch, epoch + 1);

    const err = await env.sql
      .begin(async (tx) => {
        await tx`insert into contract_writes values (${shard}, ${epoch})`;
        await assertEpoch(tx, shard, epoch);
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    t.ok(err instanceof FencedError, 'a stale epoch is refused');
    t.match(err, { code: 'actor_unavailable', shard, epoch, current: newEpoch });
    const [row] = await env.sql<{ n: string }[]>`select count(*) as n from contract_writes where shard = ${shard}`;
    t.equal(Number(row!.n), 2, 'the refused write rolled back');
    await t.rejects(env.sql.begin((tx) => assertEpoch(tx, SHARD_COUNT + 1, 1)), FencedError, 'an unknown shard is refused');
  });
}
