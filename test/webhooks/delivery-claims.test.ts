// How the sending node claims and holds messages: claims ahead of free slots (bounded), released on
// stop; fan-outs racing on the same events write each message and each SKIPPED row once; an outcome
// is fenced by the shard epoch its message was claimed under.
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { ManualClock, iso } from '../../src/core/clock.ts';
import { LocalBus } from '../../src/platform/cluster/bus.ts';
import { shardOf, type Cluster } from '../../src/platform/cluster/cluster.ts';
import { newId } from '../../src/platform/ids.ts';
import { createLogger } from '../../src/platform/logger.ts';
import type { Node } from '../../src/server/node.ts';
import { WebhookDelivery } from '../../src/services/webhooks/delivery.ts';
import { Outbox } from '../../src/platform/outbox.ts';
import { webhookActor } from '../../src/services/webhooks/envelope.ts';
import { newSecret } from '../../src/services/webhooks/signing.ts';
import { createTenant, startTestNode } from '../helpers/node.ts';
import { Receiver } from '../helpers/receiver.ts';

async function addEndpoint(node: Node, orgId: string, url: string, status: 'ACTIVE' | 'DISABLED' = 'ACTIVE'): Promise<string> {
  const { sql, tokens, clock } = node.app;
  const id = newId('whe', clock.now());
  await sql`insert into webhook_endpoints (id, org_id, url, events, status, secret_sealed, created_at, updated_at)
    values (${id}, ${orgId}, ${url}, ${['*']}, ${status}, ${tokens.data.seal(newSecret())}, ${iso(clock.now())}, ${iso(clock.now())})`;
  return id;
}

/** Events written straight into the outbox (no after-commit wake-up: only the poll or a test's own fan-out finds them). */
async function addEvents(node: Node, orgId: string, n: number): Promise<string[]> {
  const { sql, clock } = node.app;
  const ids = Array.from({ length: n }, () => newId('evt', clock.now()));
  await sql`insert into outbox (id, org_id, type, data, created_at)
    select id, ${orgId}, 'user.created', '{}'::jsonb, ${iso(clock.now())} from unnest(${ids}::text[]) as id`;
  return ids;
}

async function setup(t: Test, overrides: Record<string, unknown> = {}) {
  const clock = new ManualClock(Date.parse('2026-03-02T08:00:00Z'));
  const node = await startTestNode(t, { clock, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true, ...overrides } });
  return { clock, node, sql: node.app.sql, delivery: node.app.delivery };
}

async function until(what: string, ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!(await ok())) {
    if (performance.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(20);
  }
}

t.test('claims ahead: a slow endpoint holds at most twice its concurrency, sends at most its concurrency; stop releases what it never started', async (t) => {
  const { node, sql, delivery } = await setup(t, { AULA_WEBHOOK_CONCURRENCY: 3 });
  const slow = await Receiver.start(t);
  const other = await Receiver.start(t);
  slow.answer = () => ({ hang: true });
  const a = await createTenant(node, 'pro');
  const b = await createTenant(node, 'pro');
  const slowId = await addEndpoint(node, a.orgId, slow.url());
  await addEndpoint(node, b.orgId, other.url());
  await addEvents(node, a.orgId, 12);
  await addEvents(node, b.orgId, 4);
  const claimed = async () =>
    (await sql<{ n: number }[]>`select count(*)::int as n from webhook_messages where endpoint_id = ${slowId} and status = 'PENDING' and claimed_until is not null`)[0]!.n;

  const ticking = delivery.tick();
  await slow.waitFor(3);
  await other.waitFor(4);
  await until('the slow endpoint to hold its claims', async () => (await claimed()) === 6);
  await sleep(700); // a poll or two
  t.equal(slow.inFlight, 3, 'three sends in flight to the slow endpoint');
  t.equal(await claimed(), 6, 'and three more claimed ahead, no more');
  t.equal(other.received.length, 4, 'the other endpoint is not held up');

  const stopping = delivery.stop(10_000);
  await until('the claims of the three never started to be released', async () => (await claimed()) === 3);
  t.pass('stopping releases the claims of the three never started; the three in flight keep theirs');
  slow.answer = () => ({ status: 200, body: 'ok' });
  slow.release();
  await stopping;
  await ticking;
  const n = (await sql<{ n: number }[]>`select count(*)::int as n from webhook_messages where endpoint_id = ${slowId} and status = 'SUCCEEDED'`)[0]!.n;
  t.equal(n, 3, 'the three in flight record their outcome while the node stops');
  t.equal(slow.received.length, 3, 'nothing else was sent');

  delivery.start(500);
  await delivery.tick();
  t.equal(slow.received.length, 12, 'the rest are sent after a restart');
  t.equal(new Set(slow.received.map((r) => r.body.id)).size, 12, 'each event once');
  t.equal(slow.maxInFlight, 3);
});

t.test('fan-outs racing on the same events write each message and each SKIPPED row once', async (t) => {
  const { node, sql } = await setup(t);
  const receiver = await Receiver.start(t);
  const tenant = await createTenant(node, 'pro');
  const active = await addEndpoint(node, tenant.orgId, receiver.url());
  const disabled = await addEndpoint(node, tenant.orgId, receiver.url(), 'DISABLED');
  const events = await addEvents(node, tenant.orgId, 300);
  const { app } = node;
  // a second dispatcher on the same database, as another node's would be (owning no shard: it only fans out)
  const twin = new WebhookDelivery({
    sql,
    clock: app.clock,
    cluster: { owned: () => new Map() } as unknown as Cluster,
    bus: new LocalBus(),
    log: createLogger({ AULA_LOG_LEVEL: 'silent' }),
    outbox: new Outbox(),
    sealer: app.tokens.data,
    allowPrivate: true,
    concurrency: 8,
    maxInFlight: 64,
  });
  const taken = await Promise.all([app.delivery.fanOut(), twin.fanOut(), app.delivery.fanOut(), twin.fanOut()]);
  t.ok(taken.every((n) => n === 0 || n === 300), `each fan-out read all or nothing (${taken.join(', ')})`);
  const [counts] = await sql<{ messages: number; distinctMessages: number; skipped: number; distinctSkipped: number; undispatched: number }[]>`select
    (select count(*)::int from webhook_messages where endpoint_id = ${active}) as messages,
    (select count(distinct event_id)::int from webhook_messages where endpoint_id = ${active}) as distinct_messages,
    (select count(*)::int from webhook_attempts where endpoint_id = ${disabled} and status = 'SKIPPED') as skipped,
    (select count(distinct event_id)::int from webhook_attempts where endpoint_id = ${disabled} and status = 'SKIPPED') as distinct_skipped,
    (select count(*)::int from outbox where id = any(${events}::text[]) and dispatched_at is null) as undispatched`;
  t.same(counts, { messages: 300, distinctMessages: 300, skipped: 300, distinctSkipped: 300, undispatched: 0 });
  await app.delivery.tick();
  t.equal(receiver.received.length, 300, 'every event sent once to the active endpoint');
  t.equal(new Set(receiver.received.map((r) => r.body.id)).size, 300);
});

t.test('an outcome is fenced by the epoch its message was claimed under', async (t) => {
  const { node, sql, delivery } = await setup(t);
  const receiver = await Receiver.start(t);
  receiver.answer = () => ({ hang: true });
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  await addEvents(node, tenant.orgId, 1);
  const shard = shardOf(webhookActor(ep));
  const ticking = delivery.tick();
  await receiver.waitFor(1);
  // another node takes the shard (its epoch moves on) while the attempt is in flight
  await sql`update shards set epoch = epoch + 1 where id = ${shard}`;
  receiver.answer = () => ({ status: 200, body: 'ok' });
  receiver.release();
  await ticking;
  await sleep(200);
  const [m] = await sql<{ status: string; attempts: number }[]>`select status, attempts from webhook_messages where endpoint_id = ${ep}`;
  t.match(m, { status: 'PENDING', attempts: 0 }, 'the former owner records nothing: the message is the new owner\'s to send');
  const n = (await sql<{ n: number }[]>`select count(*)::int as n from webhook_attempts where endpoint_id = ${ep}`)[0]!.n;
  t.equal(n, 0, 'no log row');
});

t.test('a response body with NUL bytes is kept (as U+FFFD) and its outcome recorded with the others of its batch', async (t) => {
  const { node, sql, delivery } = await setup(t);
  const receiver = await Receiver.start(t);
  let n = 0;
  receiver.answer = () => (n++ === 0 ? { status: 500, body: 'bad\u0000body' } : { status: 200, body: 'ok' });
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  await addEvents(node, tenant.orgId, 5);
  await delivery.tick();
  t.equal(receiver.received.length, 5);
  const rows = await sql<{ status: string; responseBody: string }[]>`select status, response_body from webhook_attempts where endpoint_id = ${ep} order by status`;
  t.same(rows.map((r) => r.status), ['FAILED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED'], 'every outcome recorded');
  t.equal(rows[0]!.responseBody, 'bad\ufffdbody');
});
