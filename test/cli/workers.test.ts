import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import t from 'tap';
import { readPlacement } from '../../src/platform/cluster/placement.ts';
import { pgOptions, type Sql } from '../../src/platform/db/index.ts';
import { aula } from '../helpers/cli.ts';
import { createTestDatabase, REDIS_URL, TEST_SECRET } from '../helpers/node.ts';
import { tcpSocketsOf } from '../helpers/sockets.ts';
import { spawnWorkers } from '../helpers/workers.ts';
import { eventually } from '../helpers/ws.ts';

const listening = (l: Record<string, unknown>) => l.msg === 'aula node listening';
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

t.test('serve --workers N > 1 is refused without a shared database and Redis', async (t) => {
  const noRedis = await aula(['serve', '--workers', '2'], { AULA_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres', AULA_REDIS_URL: '' });
  t.equal(noRedis.code, 78);
  t.match(noRedis.stderr, /--workers 2 needs AULA_DATABASE_URL and AULA_REDIS_URL \(AULA_REDIS_URL unset\)/);
  const neither = await aula(['serve', '--workers', '3'], { AULA_DATABASE_URL: '', AULA_REDIS_URL: '' });
  t.equal(neither.code, 78);
  t.match(neither.stderr, /AULA_DATABASE_URL and AULA_REDIS_URL unset/);
  const bad = await aula(['serve', '--workers', 'many'], {});
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--workers must be a whole number/);
});

t.test('serve --workers 3: three nodes on one port, a killed one restarted, SIGTERM drains them all', async (t) => {
  const dbUrl = await createTestDatabase(t);
  const prefix = `aulatest:${randomBytes(4).toString('hex')}:`;
  const env = { AULA_DATABASE_URL: dbUrl, AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: prefix, AULA_SECRET_KEY: TEST_SECRET };
  const redis = new Redis(REDIS_URL);
  const sql = postgres(dbUrl, { ...pgOptions, max: 2 }) as unknown as Sql;
  t.teardown(async () => {
    redis.disconnect();
    await sql.end();
  });

  const w = spawnWorkers(t, 3, env);
  await w.line((l) => l.msg === 'aula workers listening', 30_000);
  // the workers' own lines may come after the primary's (separate processes writing to one pipe)
  const started = (await eventually(() => (w.logs.filter(listening).length >= 3 ? w.logs.filter(listening) : null), 5000))!;
  t.equal(started.length, 3, 'each worker logs its own listening line');
  const ports = new Set(started.map((l) => l.port));
  t.equal(ports.size, 1, 'one port for all');
  const port = started[0]!.port as number;
  t.ok(port > 0, `a free port picked by the primary (${port})`);
  const pids = started.map((l) => l.pid as number);
  t.equal(new Set(pids).size, 3, 'three processes');
  t.notOk(pids.includes(w.proc.pid!), 'none of them the primary');
  t.same(started.map((l) => l.worker).sort(), [1, 2, 3]);

  for (const pid of pids) {
    t.ok(tcpSocketsOf(pid).some((s) => s.state === 'LISTEN' && s.localPort === port), `worker ${pid} listens on ${port} itself (SO_REUSEPORT)`);
  }
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { headers: { connection: 'close' } });
    t.equal(res.status, 200);
    await res.arrayBuffer();
  }
  const nodes = (await eventually(async () => {
    const p = await readPlacement(redis, sql, prefix);
    return p.nodes.length === 3 && p.shards.every((s) => s.owner) ? p.nodes : null;
  }, 15_000))!;
  t.same(nodes.map((m) => m.pid).sort(), [...pids].sort(), 'aula cluster status lists the three workers');

  const victim = pids[1]!;
  const from = w.logs.length;
  process.kill(victim, 'SIGKILL');
  const dead = await w.line((l) => l.msg === 'worker exited unexpectedly; restarting it', 10_000, from);
  t.match(dead, { workerPid: victim, signal: 'SIGKILL', restartInMs: Number });
  const back = await w.line(listening, 30_000, from);
  t.equal(back.port, port, 'the replacement listens on the same port');
  t.not(back.pid, victim);
  t.equal(back.worker, dead.worker, 'in the same slot');
  const after = (await eventually(async () => {
    const p = await readPlacement(redis, sql, prefix);
    const live = p.nodes.map((m) => m.pid).sort();
    return live.length === 3 && live.includes(back.pid as number) && p.shards.every((s) => s.owner && p.nodes.some((m) => m.id === s.owner)) ? p : null;
  }, 15_000))!;
  t.notOk(after.nodes.some((m) => m.pid === victim), 'the killed worker is gone from the cluster');

  const workers = after.nodes.map((m) => m.pid);
  w.proc.kill('SIGTERM');
  const exit = await w.exited;
  t.same(exit, { code: 0, signal: null }, 'the primary exits 0 once every worker has drained');
  t.equal(w.logs.filter((l) => l.msg === 'aula node stopping').length, 3, 'each worker got the signal');
  t.equal(w.logs.filter((l) => l.msg === 'worker exited unexpectedly; restarting it').length, 1, 'nothing restarted during the shutdown');
  t.ok(workers.every((pid) => !alive(pid)), 'no worker left behind');
  const p = await readPlacement(redis, sql, prefix);
  t.same(p.nodes, [], 'every worker deregistered');
  t.ok(p.shards.every((s) => s.owner === null), 'and handed its shards back');
  const rows = await sql<{ owner: string | null }[]>`select owner from shards`;
  t.ok(rows.every((r) => r.owner === null), 'released in Postgres too (drained, not lost)');
});

t.test('workers of a primary that is killed drain and exit on their own', async (t) => {
  const dbUrl = await createTestDatabase(t);
  const prefix = `aulatest:${randomBytes(4).toString('hex')}:`;
  const w = spawnWorkers(t, 2, { AULA_DATABASE_URL: dbUrl, AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: prefix, AULA_SECRET_KEY: TEST_SECRET });
  await w.line((l) => l.msg === 'aula workers listening', 30_000);
  const pids = (await eventually(() => (w.logs.filter(listening).length >= 2 ? w.logs.filter(listening) : null), 5000))!.map((l) => l.pid as number);
  w.proc.kill('SIGKILL');
  await eventually(() => pids.every((pid) => !alive(pid)), 15_000);
  t.pass('both workers exited');
});
