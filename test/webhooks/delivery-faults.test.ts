// Webhook delivery when processes and Redis fail, with real node processes (`aula serve`), real
// Postgres, real Redis and a real receiver: kill -9 of the node in the middle of a send, and a Redis
// restart in the middle of a stream of events. At-least-once: every event arrives, with its id.
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import t, { type Test } from 'tap';
import { iso, systemClock } from '../../src/core/clock.ts';
import { LocalBus } from '../../src/platform/cluster/bus.ts';
import { shardOf } from '../../src/platform/cluster/cluster.ts';
import { pgOptions, type Sql } from '../../src/platform/db/index.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { newId } from '../../src/platform/ids.ts';
import { SCOPES } from '../../src/core/scopes.ts';
import { ApiKeys } from '../../src/services/api-keys.ts';
import { createOrg } from '../../src/services/orgs.ts';
import { Tokens } from '../../src/services/tokens.ts';
import { webhookActor } from '../../src/services/webhooks/envelope.ts';
import { newSecret } from '../../src/services/webhooks/signing.ts';
import { verifySvcSignature } from '../../src/services/webhooks/verify.ts';
import { Fleet } from '../cluster/fixtures/fleet.ts';
import { createTestDatabase, REDIS_URL, TEST_SECRET } from '../helpers/node.ts';
import { spawnNode, type NodeProcess } from '../helpers/process.ts';
import { Receiver } from '../helpers/receiver.ts';
import { freePort, redisPrefixFor, startRedisServer } from '../helpers/redis-server.ts';

const dbUrl = await createTestDatabase(t);
const sql = postgres(dbUrl, { ...pgOptions, max: 4 }) as unknown as Sql;
t.teardown(() => sql.end({ timeout: 1 }));
await migrate(sql);
const sealer = new Tokens(TEST_SECRET).data;
const baseEnv = {
  AULA_DATABASE_URL: dbUrl,
  AULA_DATABASE_POOL: '6',
  AULA_SECRET_KEY: TEST_SECRET,
  WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
  AULA_WEBHOOK_POLL_MS: '200',
};

async function tenant(name: string) {
  const org = await createOrg(sql, systemClock, { name, plan: 'pro' });
  const key = (await new ApiKeys(sql, systemClock, new LocalBus()).create(sql, { orgId: org.id, name: 'faults', scopes: [...SCOPES] })).key;
  return { orgId: org.id, key };
}

async function addEndpoint(orgId: string, url: string): Promise<{ id: string; secret: string }> {
  const id = newId('whe');
  const secret = newSecret();
  const now = iso(Date.now());
  await sql`insert into webhook_endpoints (id, org_id, url, events, status, secret_sealed, created_at, updated_at)
    values (${id}, ${orgId}, ${url}, ${['*']}, 'ACTIVE', ${sealer.seal(secret)}, ${now}, ${now})`;
  return { id, secret };
}

async function post(url: string, key: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${url}/api/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

t.test('kill -9 of the node in the middle of a send: the survivor sends the event again, same id', async (t) => {
  const redis = new Redis(REDIS_URL);
  const prefix = redisPrefixFor(t, redis);
  const fleet = new Fleet(t, { env: { ...baseEnv, AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: prefix }, redis, sql, prefix });
  const [a, b] = await Promise.all([fleet.start('a'), fleet.start('b')]);
  t.teardown(() => {
    if (t.passing()) return;
    for (const p of fleet.procs) for (const l of p.node.logs) if ((l.level as number) >= 40) t.comment(`${p.name}: ${JSON.stringify(l).slice(0, 400)}`);
  });
  await fleet.waitSettled([a!, b!]);
  const receiver = await Receiver.start(t);
  receiver.answer = () => ({ hang: true });
  const { orgId, key } = await tenant('Kill School');
  const ep = await addEndpoint(orgId, receiver.url());
  const shard = shardOf(webhookActor(ep.id));
  // the shard's owner as Postgres records it (placement settled in Redis first; the epoch row follows)
  let sender: ReturnType<typeof fleet.byNode>;
  for (let i = 0; i < 100 && !sender; i++) {
    if (i) await sleep(50);
    const [row] = await sql<{ owner: string | null }[]>`select owner from shards where id = ${shard}`;
    sender = fleet.byNode(row?.owner ?? null);
  }
  if (!sender) throw new Error(`shard ${shard} has no owner among the fleet after 5 s`);
  const other = sender === a ? b! : a!;
  t.comment(`endpoint on shard ${shard}, owned by ${sender.name}; the event is created through ${other.name}`);

  // created through the other node: fanned out there, and the owner is woken over the bus
  const user = await post(other.url, key, '/public/users', { externalId: 'kill-1', fullName: 'Kim Kill', role: 'STUDENT' });
  await receiver.waitFor(1, 10_000);
  t.equal(receiver.received[0]!.body.data.userId, user.id, 'the owner is sending the event (the receiver holds the request)');
  const killedAt = performance.now();
  const gone = once(sender.node.proc, 'exit');
  sender.node.proc.kill('SIGKILL');
  await gone;
  receiver.answer = () => ({ status: 200, body: 'ok' });
  await receiver.waitFor(2, 20_000).catch(async (err) => {
    // what the database says happened to the message, for the failure report
    t.comment(`message: ${JSON.stringify(await sql`select status, attempts, next_attempt_at, claimed_until from webhook_messages where endpoint_id = ${ep.id}`)}`);
    t.comment(`attempts: ${JSON.stringify(await sql`select status, status_code, error_kind, error_message from webhook_attempts where endpoint_id = ${ep.id}`)}`);
    t.comment(`shard ${shard}: ${JSON.stringify(await sql`select owner, epoch, acquired_at from shards where id = ${shard}`)}`);
    throw err;
  });
  const again = receiver.received[1]!;
  t.comment(`sent again ${Math.round(performance.now() - killedAt)} ms after the kill`);
  t.equal(again.headers['svc-webhook-id'], receiver.received[0]!.headers['svc-webhook-id'], 'the same event id');
  t.equal(again.raw.toString(), receiver.received[0]!.raw.toString(), 'the same body');
  t.ok(verifySvcSignature({ secret: ep.secret, headers: again.headers, rawBody: again.raw }).ok, 'signed');
  // the outcome is recorded by the survivor
  let msg: { status: string; attempts: number } | undefined;
  for (let i = 0; i < 50 && msg?.status !== 'SUCCEEDED'; i++) {
    [msg] = await sql<{ status: string; attempts: number }[]>`select status, attempts from webhook_messages where endpoint_id = ${ep.id}`;
    if (msg?.status !== 'SUCCEEDED') await sleep(100);
  }
  t.match(msg, { status: 'SUCCEEDED', attempts: 1 }, 'recorded once, as the first attempt (the killed one recorded nothing)');
  const logs = await sql`select status from webhook_attempts where endpoint_id = ${ep.id}`;
  t.same(logs.map((l) => l.status), ['SUCCEEDED']);
  await sleep(500);
  t.equal(receiver.received.length, 2, 'and not sent a third time');
});

t.test('Redis restarted in the middle of a stream of events: every event is delivered', async (t) => {
  const port = await freePort();
  let redis = await startRedisServer(t, port);
  const env = { ...baseEnv, AULA_REDIS_URL: `redis://127.0.0.1:${port}`, AULA_REDIS_PREFIX: 'aula:' };
  const nodes: NodeProcess[] = await Promise.all([spawnNode(t, env), spawnNode(t, env)]);
  const receiver = await Receiver.start(t);
  const { orgId, key } = await tenant('Restart School');
  await addEndpoint(orgId, receiver.url());

  const created: string[] = [];
  let failedCalls = 0;
  const produce = async (n: number, from: number) => {
    for (let i = from; i < from + n; i++) {
      const via = nodes[i % nodes.length]!;
      try {
        const u = await post(via.url, key, '/public/users', { externalId: `r-${i}`, fullName: `Rae ${i}`, role: 'STUDENT' });
        created.push(u.id);
      } catch {
        failedCalls++;
      }
      await sleep(20);
    }
  };
  await produce(20, 0);
  redis.kill('SIGKILL');
  await new Promise((r) => redis.once('exit', r));
  await produce(20, 20); // while Redis is down: the API still answers, events are still committed
  await sleep(3500); // past the shard lease: the nodes step down and own nothing until Redis is back
  redis = await startRedisServer(t, port);
  await produce(20, 40);
  t.comment(`${created.length} users created, ${failedCalls} API calls refused while Redis was down`);
  t.ok(created.length >= 40, 'the API kept creating users through the restart');

  const want = new Set(created);
  const until = performance.now() + 30_000;
  const seen = () => new Set(receiver.received.filter((r) => r.body?.type === 'user.created').map((r) => r.body.data.userId as string));
  while (performance.now() < until && [...want].some((id) => !seen().has(id))) await sleep(200);
  const missing = [...want].filter((id) => !seen().has(id));
  t.same(missing, [], `every one of the ${want.size} events was delivered after the restart`);
  const ids = receiver.received.map((r) => r.body.id as string);
  t.comment(`${ids.length} requests for ${new Set(ids).size} distinct events (duplicates are allowed: at-least-once)`);
  // the last outcomes may still be being recorded as the last requests arrive
  let pending = -1;
  for (let i = 0; i < 50 && pending !== 0; i++) {
    if (i) await sleep(100);
    [{ pending }] = (await sql<{ pending: number }[]>`select count(*)::int as pending from webhook_messages where status <> 'SUCCEEDED'`) as unknown as [{ pending: number }];
  }
  t.equal(pending, 0, 'every message is recorded as delivered');
});
