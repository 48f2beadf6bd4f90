// A test event or a redelivery with an Idempotency-Key, and a kill -9 of the node that serves it, real
// processes (`aula serve`), Postgres, Redis and receivers: once after the request's claim committed and
// before a byte of the event left (the receiver accepts the connection and never answers the TLS
// handshake), once after the receiver has the event and before the node learns how it went (the receiver
// holds its answer). The spec says a test is sent "once, no retries", and a redelivery once: a retry with
// the key, on another node, answers what the claim stored and sends nothing, and the delivery log says
// the same as that answer.
import { once } from 'node:events';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import t, { type Test } from 'tap';
import { iso, systemClock } from '../../src/core/clock.ts';
import { LocalBus } from '../../src/platform/cluster/bus.ts';
import { shardOf } from '../../src/platform/cluster/cluster.ts';
import { desiredOwners } from '../../src/platform/cluster/placement.ts';
import { pgOptions, type Sql } from '../../src/platform/db/index.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { newId } from '../../src/platform/ids.ts';
import { SCOPES } from '../../src/core/scopes.ts';
import { Admins } from '../../src/services/admins.ts';
import { ApiKeys } from '../../src/services/api-keys.ts';
import { createOrg } from '../../src/services/orgs.ts';
import { Tokens } from '../../src/services/tokens.ts';
import { insertAttempt } from '../../src/services/webhooks/envelope.ts';
import { newSecret } from '../../src/services/webhooks/signing.ts';
import { createTestDatabase, REDIS_URL, TEST_SECRET } from '../helpers/node.ts';
import { spawnNode, type NodeProcess } from '../helpers/process.ts';
import { Receiver } from '../helpers/receiver.ts';
import { redisPrefixFor } from '../helpers/redis-server.ts';
import { lastActorWrite } from '../helpers/actor-state.ts';

const dbUrl = await createTestDatabase(t);
const sql = postgres(dbUrl, { ...pgOptions, max: 4 }) as unknown as Sql;
t.teardown(() => sql.end({ timeout: 1 }));
await migrate(sql);
const redis = new Redis(REDIS_URL);
t.teardown(() => redis.quit());
const env = {
  AULA_DATABASE_URL: dbUrl,
  AULA_DATABASE_POOL: '6',
  AULA_SECRET_KEY: TEST_SECRET,
  AULA_REDIS_URL: REDIS_URL,
  AULA_REDIS_PREFIX: redisPrefixFor(t, redis),
  WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
};

const org = await createOrg(sql, systemClock, { name: 'Crash School', plan: 'pro' });
const apiKey = (await new ApiKeys(sql, systemClock, new LocalBus()).create(sql, { orgId: org.id, name: 'crash', scopes: [...SCOPES] })).key;
const PASSWORD = 'correct horse battery staple';
await new Admins(sql, systemClock, new LocalBus()).create(sql, { orgId: org.id, email: 'owner@crash.example', role: 'owner', password: PASSWORD });
const sealer = new Tokens(TEST_SECRET).data;

let node: NodeProcess = await spawnNode(t, env);
const signIn = await call('POST', '/auth/sign-in', { body: { orgId: org.id, email: 'owner@crash.example', password: PASSWORD } });
if (signIn.status !== 200) throw new Error(`sign-in: ${signIn.status} ${JSON.stringify(signIn.body)}`);
/** A bearer session: stored in Postgres, so it works on every node the test starts. */
const adminToken = signIn.body.data.sessionToken as string;

async function call(method: string, path: string, opts: { bearer?: string; body?: unknown; idempotencyKey?: string; via?: NodeProcess } = {}) {
  const res = await fetch(`${(opts.via ?? node).url}/api/v1${path}`, {
    method,
    headers: {
      ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}),
      ...(opts.body ? { 'content-type': 'application/json' } : {}),
      ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}),
    },
    ...(opts.body ? { body: JSON.stringify(opts.body) } : {}),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

async function addEndpoint(url: string): Promise<string> {
  const id = newId('whe');
  const now = iso(Date.now());
  await sql`insert into webhook_endpoints (id, org_id, url, events, status, secret_sealed, created_at, updated_at)
    values (${id}, ${org.id}, ${url}, ${['*']}, 'ACTIVE', ${sealer.seal(newSecret())}, ${now}, ${now})`;
  return id;
}

/** A delivery to redeliver: an event the endpoint missed while disabled (SKIPPED). */
async function missedDelivery(endpointId: string): Promise<{ deliveryId: string; eventId: string }> {
  const eventId = newId('evt');
  const now = Date.now();
  await sql`insert into outbox (id, org_id, type, data, created_at, dispatched_at)
    values (${eventId}, ${org.id}, 'user.created', ${sql.json({ userId: 'usr_crash', name: 'Cass Crash' })}, ${iso(now)}, ${iso(now)})`;
  const deliveryId = await insertAttempt(sql, { endpointId, orgId: org.id, messageId: null, eventId, eventType: 'user.created', attempt: 0, trigger: 'EVENT', at: now, result: 'SKIPPED' });
  return { deliveryId, eventId };
}

/** A receiver that accepts connections and never answers the TLS handshake: a sender holding one has sent none of the event. */
async function silentTls(t: Test): Promise<{ url: string; connections: () => number }> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { url: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`, connections: () => connections };
}

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await sleep(20);
  }
}

/** kill -9 of the serving node, and a new node on the same database and Redis. */
async function crashAndReplace(): Promise<void> {
  const gone = once(node.proc, 'exit');
  node.proc.kill('SIGKILL');
  await gone;
  node = await spawnNode(t, env);
}

interface Case {
  name: string;
  /** The request, on either surface. */
  path: (endpointId: string) => Promise<{ path: string; bearer: string; eventId?: string }>;
  trigger: 'TEST' | 'REDELIVERY';
  /** Where the node is when it is killed. */
  kill: 'after the claim, before the send' | 'after the send, before its outcome';
}

const test = (id: string) => Promise.resolve({ path: `/public/webhooks/${id}/test`, bearer: apiKey });
const redeliverAsAdmin = async (id: string) => {
  const { deliveryId, eventId } = await missedDelivery(id);
  return { path: `/orgs/${org.id}/webhooks/deliveries/${deliveryId}/redeliver`, bearer: adminToken, eventId };
};
const cases: Case[] = [
  { name: 'a test event (API key)', path: test, trigger: 'TEST', kill: 'after the claim, before the send' },
  { name: 'a test event (API key)', path: test, trigger: 'TEST', kill: 'after the send, before its outcome' },
  { name: 'a redelivery (signed-in admin)', path: redeliverAsAdmin, trigger: 'REDELIVERY', kill: 'after the claim, before the send' },
  { name: 'a redelivery (signed-in admin)', path: redeliverAsAdmin, trigger: 'REDELIVERY', kill: 'after the send, before its outcome' },
];

for (const c of cases) {
  t.test(`kill -9 ${c.kill}: a retry of ${c.name} answers the stored answer and sends nothing again`, async (t) => {
    let url: string;
    let attempts: () => number;
    let received: () => { id: string; raw: string }[] = () => [];
    if (c.kill === 'after the claim, before the send') {
      const silent = await silentTls(t);
      url = silent.url;
      attempts = silent.connections;
    } else {
      const receiver = await Receiver.start(t);
      receiver.answer = () => ({ hang: true });
      url = receiver.url();
      attempts = () => receiver.received.length;
      received = () => receiver.received.map((r) => ({ id: r.body.id as string, raw: r.raw.toString() }));
    }
    const endpointId = await addEndpoint(url);
    const { path, bearer, eventId } = await c.path(endpointId);
    const idempotencyKey = `crash-${endpointId}`;

    const first = call('POST', path, { bearer, idempotencyKey }).catch((err: Error) => err);
    await until('the node to reach the receiver', () => attempts() === 1);
    await crashAndReplace();
    t.type(await first, Error, 'the first request got no answer');

    const early = await call('POST', path, { bearer, idempotencyKey });
    t.equal(early.status, 409, 'within the 60 s the dead request holds its key');
    t.equal(early.body.error?.code, 'idempotency_in_progress');
    // the 60 seconds pass
    await sql`update idempotency_keys set locked_until = now() - interval '1 second' where key = ${idempotencyKey}`;

    const retry = await call('POST', path, { bearer, idempotencyKey });
    t.equal(retry.status, 201, JSON.stringify(retry.body));
    t.equal(retry.headers.get('idempotent-replayed'), 'true', 'the stored answer');
    const answer = retry.body.data;
    t.match(answer, { endpointId, trigger: c.trigger, attempt: 1, status: 'FAILED', statusCode: null, durationMs: null, responseBody: null, error: { kind: 'interrupted' } });
    t.match(answer.error.message, /at most once/);
    if (eventId) t.equal(answer.eventId, eventId, 'the same event, redelivered');
    await sleep(300);
    t.equal(attempts(), 1, 'the retry sent nothing: attempted once');
    for (const r of received()) t.equal(r.id, answer.eventId, 'the receiver has the event the answer names');

    const logged = await call('GET', `/public/webhooks/deliveries/${answer.id}`, { bearer: apiKey });
    t.equal(logged.status, 200);
    const { payload, ...record } = logged.body.data;
    t.same(record, answer, 'the delivery log says what the answer says');
    for (const r of received()) t.same(payload, JSON.parse(r.raw), 'with the event exactly as it was sent');
    const rows = await sql`select id from webhook_attempts where endpoint_id = ${endpointId} and trigger = ${c.trigger}`;
    t.same(rows.map((r) => r.id), [answer.id], 'one attempt in the log');
    if (c.trigger === 'TEST') {
      const events = await sql`select id from outbox where type = 'webhook.test' and data->>'endpointId' = ${endpointId}`;
      t.same(events.map((e) => e.id), [answer.eventId], 'one test event');
    }
    const again = await call('POST', path, { bearer, idempotencyKey });
    t.same(again.body, retry.body, 'and every later retry the same');
  });
}

// A command to an actor on another node: node A takes the request and asks; the actor's node B commits
// while A is already dead. The change and the answer commit together on B, so a retry with the key, on
// B, answers at once what the first request would have.
const nodeIdOf = (n: NodeProcess) => n.logs.find((l) => l.msg === 'cluster node started')!.nodeId as string;
const ownerOf = async (actorId: string) => (await sql<{ owner: string | null }[]>`select owner from shards where id = ${shardOf(actorId)}`)[0]?.owner ?? null;

t.test('kill -9 of the node that took a cancel or an admit, before the actor on another node commits: a retry answers the answer stored with the change', async (t) => {
  const b = await spawnNode(t, env);
  const a = node;
  // settled: every shard on the owner the placement wants for A and B (the nodes killed above have left)
  const desired = desiredOwners([nodeIdOf(a), nodeIdOf(b)].sort());
  await until('the placement to settle on A and B', async () => {
    const rows = await sql<{ id: number; owner: string | null }[]>`select id, owner from shards order by id`;
    return rows.every((r) => r.owner === desired[r.id]);
  }, 45_000);
  const onB = async (prefix: string, create: () => Promise<string>): Promise<string> => {
    for (let i = 0; i < 64; i++) {
      const id = await create();
      if ((await ownerOf(`${prefix}:${id}`)) === nodeIdOf(b)) return id;
    }
    throw new Error(`no ${prefix} actor landed on node B`);
  };
  const at = (n: NodeProcess) => (method: string, path: string, opts: { body?: unknown; idempotencyKey?: string } = {}) => call(method, path, { bearer: apiKey, via: n, ...opts });
  const teacher = await at(b)('POST', '/public/users', { body: { externalId: 'crash-teacher', fullName: 'Tess Crash', role: 'TEACHER' } });
  if (teacher.status !== 201) throw new Error(JSON.stringify(teacher.body));
  const start = new Date(Date.now() + 86_400_000).toISOString();
  const meeting = (title: string, settings: Record<string, unknown> = {}) => async () => {
    const res = await at(b)('POST', '/public/meetings', { body: { title, type: 'MEETING', hostUserId: 'crash-teacher', scheduledStart: start, durationMinutes: 30, settings } });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    return res.body.data.id as string;
  };
  const cancelId = await onB('meeting', meeting('Cancelled while its node died'));
  const roomId = await onB('waiting-room', meeting('Admitted while its node died', { waitingRoom: true }));
  const student = await at(b)('POST', '/public/users', { body: { externalId: 'crash-student', fullName: 'Wren Crash', role: 'STUDENT' } });
  const link = await at(b)('POST', `/public/meetings/${roomId}/join-links`, { body: { userId: student.body.data.id } });
  const exchange = await at(b)('POST', '/join-tokens/exchange', { body: { token: link.body.data.token, deviceId: 'crash-device' } });
  const queueId = exchange.body.data.waitingRoom.queueId as string;

  const cases = [
    { name: 'cancel', actor: `meeting:${cancelId}`, path: `/public/meetings/${cancelId}/cancel`, status: (body: any) => body.data.status, expect: 'CANCELLED', key: `crash-cancel-${cancelId}` },
    { name: 'admit', actor: `waiting-room:${roomId}`, path: `/public/meetings/${roomId}/waiting-room/${queueId}/admit`, status: (body: any) => body.data.status, expect: 'ADMITTED', key: `crash-admit-${roomId}` },
  ];
  // B's commit of each actor waits on a lock the test holds: its snapshot row (cancel ends the meeting, which
  // writes the whole state) and the key of its next delta (admit writes a delta), taken by a row of the test
  // that is never committed; A takes both requests and asks B
  const lock = await sql.reserve();
  await lock`begin`;
  for (const c of cases) {
    await lock`select 1 from actor_snapshots where actor_id = ${c.actor} for update`;
    await lock`insert into actor_deltas (actor_id, seq, shard, patch)
      select ${c.actor}, greatest(s.seq, coalesce((select max(seq) from actor_deltas d where d.actor_id = s.actor_id), 0)) + 1, s.shard, '[]'
      from actor_snapshots s where s.actor_id = ${c.actor}`;
  }
  const firsts = cases.map((c) => at(a)('POST', c.path, { idempotencyKey: c.key }).catch((err: Error) => err));
  await until("B's two commits to wait for the lock", async () => (await sql`select 1 from pg_locks where not granted and locktype = 'transactionid'`).length >= 2);
  const gone = once(a.proc, 'exit');
  a.proc.kill('SIGKILL');
  await gone;
  for (const f of firsts) t.type(await f, Error, 'the first request got no answer');
  await lock`rollback`;
  lock.release();
  node = b;

  for (const c of cases) {
    await until(`${c.name}: B committed`, async () => (await sql`select 1 from idempotency_keys where key = ${c.key} and state = 'DONE'`).length === 1);
    const retry = await at(b)('POST', c.path, { idempotencyKey: c.key });
    t.equal(retry.status, 200, `${c.name}: ${JSON.stringify(retry.body)}`);
    t.equal(retry.headers.get('idempotent-replayed'), 'true', `${c.name}: the answer stored with the change, at once (not after the 60 s of the dead request's lock)`);
    t.equal(c.status(retry.body), c.expect, `${c.name}: it says the change`);
    const [answer] = await sql<{ tx: string }[]>`select xmin::text as tx from idempotency_keys where key = ${c.key}`;
    t.equal(answer!.tx, await lastActorWrite(sql, c.actor), `${c.name}: in the transaction of the change`);
  }
  const cancelledEvents = await sql`select id from outbox where type = 'meeting.cancelled' and data->>'meetingId' = ${cancelId}`;
  t.equal(cancelledEvents.length, 1, 'one meeting.cancelled');
  const admittedEvents = await sql`select id from outbox where type = 'participant.admitted' and data->>'meetingId' = ${roomId}`;
  t.equal(admittedEvents.length, 1, 'one participant.admitted');
});
