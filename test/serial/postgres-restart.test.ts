// A real restart of PostgreSQL under two busy node processes (`aula serve`, one Redis): a server of
// the test's own (test/helpers/postgres-server.ts) is stopped in fast mode while both nodes take
// writes, started again, then restarted once more in the middle of a stream of writes. Promises, as
// for a Redis outage: /readyz says the database is down at once, writes that need it are refused fast
// as retryable (503, Retry-After), nothing refused is stored, everything recovers without a restart of
// the nodes, and every committed event reaches the webhook receiver under one event id (retries keep
// it; none is sent under a second). Wall clock: serial lane.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import t from 'tap';
import { systemClock } from '../../src/core/clock.ts';
import { LocalBus } from '../../src/platform/cluster/bus.ts';
import { pgOptions, type Sql } from '../../src/platform/db/index.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { SCOPES } from '../../src/core/scopes.ts';
import { ApiKeys } from '../../src/services/api-keys.ts';
import { createOrg } from '../../src/services/orgs.ts';
import { REDIS_URL, TEST_SECRET } from '../helpers/node.ts';
import { startPostgresServer } from '../helpers/postgres-server.ts';
import { spawnNode, type NodeProcess } from '../helpers/process.ts';
import { Receiver } from '../helpers/receiver.ts';
import { redisPrefixFor } from '../helpers/redis-server.ts';
import { eventually } from '../helpers/ws.ts';

const pg = await startPostgresServer(t);
const sql = postgres(pg.url, { ...pgOptions, max: 2 }) as unknown as Sql;
t.teardown(() => sql.end({ timeout: 1 }));
await migrate(sql);
const org = await createOrg(sql, systemClock, { name: 'Restart School', plan: 'pro' });
const { key } = await new ApiKeys(sql, systemClock, new LocalBus()).create(sql, { orgId: org.id, name: 'restart', scopes: [...SCOPES] });

const redis = new Redis(REDIS_URL);
const prefix = redisPrefixFor(t, redis);
const env = {
  AULA_DATABASE_URL: pg.url,
  AULA_DATABASE_POOL: '4',
  AULA_REDIS_URL: REDIS_URL,
  AULA_REDIS_PREFIX: prefix,
  AULA_SECRET_KEY: TEST_SECRET,
  AULA_MEDIA_WORKERS: '0',
  WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
  AULA_WEBHOOK_POLL_MS: '200',
};
const nodes: NodeProcess[] = [await spawnNode(t, env), await spawnNode(t, env)];
const receiver = await Receiver.start(t);

interface Answer {
  status: number;
  code?: string;
  retryAfter: string | null;
  ms: number;
  body: any;
}
async function call(m: NodeProcess, method: string, path: string, body?: unknown): Promise<Answer> {
  const t0 = performance.now();
  const res = await fetch(`${m.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  const json = (await res.json().catch(() => null)) as any;
  return { status: res.status, code: json?.error?.code, retryAfter: res.headers.get('retry-after'), ms: performance.now() - t0, body: json };
}

/** Every user answered 201, and every other answer, from writes through both nodes in turn. */
const committed: string[] = [];
const refused: Answer[] = [];
const unexpected: Answer[] = [];
let n = 0;
async function write(): Promise<Answer> {
  const i = n++;
  const r = await call(nodes[i % 2]!, 'POST', '/api/v1/public/users', { externalId: `u-${i}`, fullName: `User ${i}`, role: 'STUDENT' });
  if (r.status === 201) committed.push(r.body.data.id);
  else if (r.status === 503) refused.push(r);
  else unexpected.push(r);
  return r;
}
/** Writes back to back on `lanes` lanes until `stop` resolves. */
async function stream(lanes: number, stop: Promise<unknown>): Promise<void> {
  let done = false;
  void stop.finally(() => (done = true));
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (!done) {
        await write();
        await sleep(5);
      }
    }),
  );
}
const ready = async (m: NodeProcess) => (await call(m, 'GET', '/readyz')).status === 200;

t.test('PostgreSQL stopped and started under two busy nodes', async (t) => {
  t.equal((await call(nodes[0]!, 'POST', '/api/v1/public/webhooks', { url: receiver.url(), events: ['user.created'] })).status, 201);
  for (let i = 0; i < 10; i++) t.equal((await write()).status, 201);

  // stopped (fast mode: sessions ended, open transactions rolled back) while writes stream in
  const stopped = pg.stop();
  await stream(3, stopped);
  for (const m of nodes) {
    const r = await call(m, 'GET', '/readyz');
    t.ok(r.ms < 500, `/readyz answered in ${Math.round(r.ms)} ms`);
    t.match(r, { status: 503, code: 'service_unavailable', body: { error: { details: { database: 'down' } } } }, 'and names the database');
  }
  const before = refused.length;
  for (let i = 0; i < 10; i++) {
    const r = await write();
    t.equal(r.status, 503, 'a write while the database is down is refused as unavailable');
    t.equal(r.code, 'service_unavailable');
    t.ok(r.retryAfter && Number(r.retryAfter) >= 1, `with Retry-After (${r.retryAfter})`);
    t.ok(r.ms < 1000, `fast (${Math.round(r.ms)} ms)`);
  }
  t.equal(refused.length - before, 10);

  await pg.start();
  for (const m of nodes) t.ok(await eventually(() => ready(m), 15_000), 'ready again without a restart of the node');
  for (let i = 0; i < 10; i++) t.equal((await write()).status, 201, 'writes go through again');
});

t.test('PostgreSQL restarted in the middle of a stream of writes', async (t) => {
  const from = committed.length;
  const restarted = sleep(300).then(() => pg.restart());
  await stream(3, restarted.then(() => sleep(300)));
  for (const m of nodes) t.ok(await eventually(() => ready(m), 15_000), 'ready after the restart');
  for (let i = 0; i < 10; i++) t.equal((await write()).status, 201);
  t.ok(committed.length - from >= 10, `${committed.length - from} writes committed around the restart`);
});

t.test('nothing refused is stored, every committed event is delivered under one id', async (t) => {
  t.same(unexpected.map((r) => [r.status, r.code]), [], 'every answer was 201 or 503');
  t.ok(refused.every((r) => r.code === 'service_unavailable' && r.retryAfter !== null), `all ${refused.length} refusals are retryable 503s with Retry-After`);
  const stored = await sql<{ id: string }[]>`select id from users where org_id = ${org.id}`;
  t.same(stored.map((u) => u.id).sort(), [...committed].sort(), `the database holds exactly the ${committed.length} writes answered 201`);

  const idsByUser = new Map<string, Set<string>>();
  const tally = () => {
    idsByUser.clear();
    for (const r of receiver.received) {
      if (r.body?.type !== 'user.created') continue;
      const ids = idsByUser.get(r.body.data.userId) ?? new Set<string>();
      ids.add(r.body.id);
      idsByUser.set(r.body.data.userId, ids);
    }
    return committed.every((id) => idsByUser.has(id));
  };
  await eventually(tally, 90_000).catch(() => t.comment(`received ${receiver.received.length} requests for ${idsByUser.size} of ${committed.length} users`));
  t.equal(committed.filter((id) => idsByUser.has(id)).length, committed.length, `all ${committed.length} committed users were delivered`);
  t.same([...idsByUser.entries()].filter(([, ids]) => ids.size > 1), [], 'each under exactly one event id');
  t.same([...idsByUser.keys()].filter((id) => !committed.includes(id)), [], 'and nothing that was refused');
});
