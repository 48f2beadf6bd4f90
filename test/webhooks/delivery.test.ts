import { createHmac, timingSafeEqual } from 'node:crypto';
import t, { type Test } from 'tap';
import { Webhook } from 'standardwebhooks';
import { ManualClock, iso } from '../../src/core/clock.ts';
import { AUTO_DISABLE_AFTER_MS } from '../../actors/webhook-endpoint/webhook-endpoint.machine.ts';
import type { Node } from '../../src/server/node.ts';
import { newId } from '../../src/platform/ids.ts';
import { MAX_ATTEMPTS, RETRY_SCHEDULE_MS, retryDelay } from '../../src/services/webhooks/delivery.ts';
import { webhookActor } from '../../src/services/webhooks/envelope.ts';
import { newSecret } from '../../src/services/webhooks/signing.ts';
import { verifySvcSignature } from '../../src/services/webhooks/verify.ts';
import { api, createTenant, startTestNode, type Tenant } from '../helpers/node.ts';
import { Receiver, type Received } from '../helpers/receiver.ts';

const MIN = 60_000;

/** A webhook endpoint row, as the management API stores it (secret sealed with the node's data key). */
async function addEndpoint(node: Node, orgId: string, url: string, events: string[] = ['*']): Promise<{ id: string; secret: string }> {
  const { sql, tokens, clock } = node.app;
  const id = newId('whe', clock.now());
  const secret = newSecret();
  await sql`insert into webhook_endpoints (id, org_id, url, events, status, secret_sealed, created_at, updated_at)
    values (${id}, ${orgId}, ${url}, ${events}, 'ACTIVE', ${tokens.data.seal(secret)}, ${iso(clock.now())}, ${iso(clock.now())})`;
  return { id, secret };
}

let n = 0;
async function createUser(node: Node, tenant: Tenant): Promise<string> {
  const res = await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: `u-${++n}`, email: `u${n}@example.com`, fullName: `User ${n}`, role: 'STUDENT' } });
  if (res.status !== 200 && res.status !== 201) throw new Error(`create user: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

/** The receiver's own check, from the spec's receiver rules only (raw bytes, 5 minutes, any v1=, constant time). */
function independentVerify(secret: string, r: Received, nowMs: number): boolean {
  const ts = String(r.headers['svc-webhook-timestamp'] ?? '');
  if (!/^\d+$/.test(ts) || Math.abs(nowMs / 1000 - Number(ts)) > 300) return false;
  const expected = createHmac('sha256', secret).update(Buffer.concat([Buffer.from(`${ts}.`), r.raw])).digest();
  return String(r.headers['svc-signature'] ?? '')
    .split(',')
    .filter((v) => v.trim().startsWith('v1='))
    .some((v) => {
      const got = Buffer.from(v.trim().slice(3), 'hex');
      return got.length === expected.length && timingSafeEqual(got, expected);
    });
}

async function setup(t: Test, overrides: Record<string, unknown> = {}) {
  const clock = new ManualClock(Date.parse('2026-03-02T08:00:00Z'));
  const node = await startTestNode(t, { clock, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true, ...overrides } });
  const receiver = await Receiver.start(t);
  return { clock, node, receiver, sql: node.app.sql, delivery: node.app.delivery };
}

t.test('retryDelay: the spec schedule, ±10% jitter, 8 attempts, Retry-After only postpones', async (t) => {
  t.equal(MAX_ATTEMPTS, 8);
  for (let a = 1; a < MAX_ATTEMPTS; a++) {
    const base = RETRY_SCHEDULE_MS[a - 1]!;
    t.equal(retryDelay(a, () => 0), Math.round(base * 0.9), `attempt ${a}: lowest`);
    t.equal(retryDelay(a, () => 0.5), base, `attempt ${a}: middle`);
    t.ok(retryDelay(a, () => 0.999999)! <= base * 1.1, `attempt ${a}: highest within +10%`);
  }
  t.equal(retryDelay(8, Math.random), null, 'no 9th attempt');
  t.equal(retryDelay(1, () => 0.5, 600), 600_000, 'a longer Retry-After postpones');
  t.equal(retryDelay(3, () => 0.5, 5), 30 * MIN, 'a shorter one does not bring the attempt forward');
  t.equal(retryDelay(1, () => 0.5, 10 * 86_400), 24 * 60 * MIN, 'Retry-After is capped at 24 h');
});

t.test('an event reaches the receiver signed, with the spec headers and the Standard Webhooks ones', async (t) => {
  const { clock, node, receiver, delivery, sql } = await setup(t);
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url(), ['user.created']);
  const userId = await createUser(node, tenant);
  await delivery.tick();
  t.equal(receiver.received.length, 1, 'one delivery');
  const r = receiver.received[0]!;
  t.equal(r.headers['content-type'], 'application/json');
  t.equal(r.headers['user-agent'], 'Svc-Webhooks/1.0');
  t.match(r.body, { type: 'user.created', organizationId: tenant.orgId, data: { userId } });
  t.match(r.body.id, /^evt_[0-9a-z]{26}$/);
  t.equal(r.headers['svc-webhook-id'], r.body.id, 'Svc-Webhook-Id is the body id');
  t.equal(r.headers['svc-webhook-timestamp'], String(Math.floor(clock.now() / 1000)), 'signed at the (injected) time of the attempt');
  t.same(verifySvcSignature({ secret: ep.secret, headers: r.headers, rawBody: r.raw, now: clock.now() }), { ok: true }, 'our verifier accepts it');
  t.ok(independentVerify(ep.secret, r, clock.now()), 'an independent HMAC accepts it');
  const std = new Webhook(ep.secret.slice('whsec_'.length));
  t.doesNotThrow(() => {
    // standardwebhooks checks the timestamp against the real clock: verify the signature at the signing time
    const realNow = Date.now;
    Date.now = () => clock.now();
    try {
      std.verify(r.raw.toString('utf8'), { 'webhook-id': String(r.headers['webhook-id']), 'webhook-timestamp': String(r.headers['webhook-timestamp']), 'webhook-signature': String(r.headers['webhook-signature']) });
    } finally {
      Date.now = realNow;
    }
  }, 'the standardwebhooks library accepts it');

  const [log] = await sql`select * from webhook_attempts where endpoint_id = ${ep.id}`;
  t.match(log, { status: 'SUCCEEDED', statusCode: 200, attempt: 1, trigger: 'EVENT', eventType: 'user.created', responseBody: 'ok' });
  const [msg] = await sql`select * from webhook_messages where endpoint_id = ${ep.id}`;
  t.match(msg, { status: 'SUCCEEDED', attempts: 1 });

  await createUser(node, tenant);
  await api(node, 'POST', `/public/users/${userId}/deactivate`, { key: tenant.key });
  await delivery.tick();
  t.same(receiver.received.map((x) => x.body.type), ['user.created', 'user.created'], 'only the subscribed type (user.deactivated is not)');
});

t.test('plans: no webhooks feature, nothing queued, except background events', async (t) => {
  const { node, receiver, delivery, sql, clock } = await setup(t);
  const free = await createTenant(node, 'free');
  const ep = await addEndpoint(node, free.orgId, receiver.url());
  await createUser(node, free);
  await sql.begin((tx) => node.app.outbox.emit(tx, free.orgId, 'meeting.ended', { meetingId: 'mtg_x', endedReason: 'PLAN_LIMIT' }, clock.now(), { background: true }));
  await delivery.tick();
  t.same(receiver.received.map((r) => r.body.type), ['meeting.ended'], 'only the background worker\'s event is delivered');
  const { count } = (await sql<{ count: number }[]>`select count(*)::int from webhook_messages where endpoint_id = ${ep.id}`)[0]!;
  t.equal(count, 1, 'the user.created of a free organization was never queued');
  const { undispatched } = (await sql<{ undispatched: number }[]>`select count(*)::int as undispatched from outbox where dispatched_at is null`)[0]!;
  t.equal(undispatched, 0, 'every event was dispatched (fanned out or skipped)');
});

t.test('the whole retry schedule on the injected clock: 8 attempts, re-signed, same id, jitter within ±10%', async (t) => {
  const { clock, node, receiver, delivery, sql } = await setup(t);
  receiver.answer = () => ({ status: 500, body: 'x'.repeat(5000) });
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  await createUser(node, tenant);
  await delivery.tick();
  t.equal(receiver.received.length, 1, 'first attempt at once');
  const attemptTimes = [clock.now()];
  for (let a = 1; a < 8; a++) {
    const [m] = await sql<{ nextAttemptAt: Date; attempts: number; status: string }[]>`select next_attempt_at, attempts, status from webhook_messages where endpoint_id = ${ep.id}`;
    t.equal(m!.status, 'PENDING');
    const delay = m!.nextAttemptAt.getTime() - clock.now();
    const base = RETRY_SCHEDULE_MS[a - 1]!;
    t.ok(delay >= base * 0.9 && delay <= base * 1.1, `retry ${a} after ${delay / MIN} min: within ±10% of ${base / MIN} min`);
    clock.set(m!.nextAttemptAt.getTime() - 1);
    t.equal(await delivery.tick(), 0, `nothing sent a millisecond before retry ${a} is due`);
    clock.advance(1);
    t.equal(await delivery.tick(), 1, `retry ${a} sent when due`);
    attemptTimes.push(clock.now());
  }
  clock.advance(7 * 24 * 60 * MIN);
  t.equal(await delivery.tick(), 0, 'no 9th attempt');
  t.equal(receiver.received.length, 8);
  t.equal(new Set(receiver.received.map((r) => r.body.id)).size, 1, 'one event id across every attempt');
  t.equal(new Set(receiver.received.map((r) => r.raw.toString('base64'))).size, 1, 'the same body bytes every time');
  t.same(receiver.received.map((r) => Number(r.headers['svc-webhook-timestamp'])), attemptTimes.map((x) => Math.floor(x / 1000)), 'each attempt signed with its own timestamp');
  t.ok(receiver.received.every((r, i) => verifySvcSignature({ secret: ep.secret, headers: r.headers, rawBody: r.raw, now: attemptTimes[i]! }).ok), 'every attempt verifies');
  const span = attemptTimes.at(-1)! - attemptTimes[0]!;
  t.ok(span > 40 * 60 * MIN && span < 50 * 60 * MIN, `8 attempts over about 45 hours (${(span / 60 / MIN).toFixed(1)} h)`);
  const logs = await sql`select attempt, status, status_code, response_body, next_attempt_at from webhook_attempts where endpoint_id = ${ep.id} order by id`;
  t.same(logs.map((l) => l.attempt), [1, 2, 3, 4, 5, 6, 7, 8], 'every attempt is in the log');
  t.ok(logs.every((l) => l.status === 'FAILED' && l.statusCode === 500 && Buffer.byteLength(l.responseBody) === 1024), 'status and the first 1 KB kept');
  t.equal(logs.at(-1)!.nextAttemptAt, null, 'the last attempt schedules nothing');
  const [m] = await sql`select status from webhook_messages where endpoint_id = ${ep.id}`;
  t.equal(m!.status, 'FAILED');
});

t.test('jitter spreads retries: many messages, every delay within ±10%, not all equal', async (t) => {
  const { clock, node, receiver, delivery, sql } = await setup(t);
  receiver.answer = () => ({ status: 503 });
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  for (let i = 0; i < 30; i++) await createUser(node, tenant);
  await delivery.tick();
  const rows = await sql<{ nextAttemptAt: Date }[]>`select next_attempt_at from webhook_messages where endpoint_id = ${ep.id}`;
  const delays = rows.map((r) => r.nextAttemptAt.getTime() - clock.now());
  t.equal(delays.length, 30);
  t.ok(delays.every((d) => d >= 0.9 * MIN && d <= 1.1 * MIN), 'within 54..66 s');
  t.ok(new Set(delays).size > 20, 'spread out');
});

t.test('Retry-After on 429 postpones the next attempt', async (t) => {
  const { clock, node, receiver, delivery, sql } = await setup(t);
  receiver.answer = () => ({ status: 429, headers: { 'retry-after': '1200' } });
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  await createUser(node, tenant);
  await delivery.tick();
  const [m] = await sql<{ nextAttemptAt: Date }[]>`select next_attempt_at from webhook_messages where endpoint_id = ${ep.id}`;
  t.equal(m!.nextAttemptAt.getTime() - clock.now(), 20 * MIN, 'retried after the 20 minutes the receiver asked for, not 1 minute');
});

t.test('3 days of failures disable the endpoint; owners are told; re-enabling resumes delivery', async (t) => {
  const { clock, node, receiver, delivery, sql } = await setup(t);
  const { app } = node;
  let up = false;
  receiver.answer = () => (up ? { status: 204 } : { status: 500 });
  const tenant = await createTenant(node, 'pro');
  await app.services.admins.create(app.sql, { orgId: tenant.orgId, email: 'owner@example.com', role: 'owner', password: 'correct horse battery staple' });
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  const start = clock.now();
  await createUser(node, tenant);
  await delivery.tick();
  let [row] = await sql`select status, failing_since from webhook_endpoints where id = ${ep.id}`;
  t.equal(row!.failingSince?.getTime(), start, 'the first failure starts the clock');

  // a success in between resets it
  up = true;
  clock.advance(MIN * 1.2);
  await delivery.tick();
  [row] = await sql`select status, failing_since from webhook_endpoints where id = ${ep.id}`;
  t.equal(row!.failingSince, null, 'a success resets it');
  up = false;

  const failStart = clock.now();
  // events keep coming and failing for 3 days
  for (let h = 0; h < 66; h += 6) {
    await createUser(node, tenant);
    await delivery.tick();
    clock.advance(6 * 60 * MIN);
    await delivery.tick();
    await app.timers.tick();
  }
  clock.set(failStart + AUTO_DISABLE_AFTER_MS - 1);
  await app.timers.tick();
  [row] = await sql`select status from webhook_endpoints where id = ${ep.id}`;
  t.equal(row!.status, 'ACTIVE', 'still active a millisecond before 3 days');
  clock.set(failStart + AUTO_DISABLE_AFTER_MS);
  await app.timers.tick();
  [row] = await sql`select status, disabled_reason, disabled_at from webhook_endpoints where id = ${ep.id}`;
  t.match(row, { status: 'DISABLED', disabledReason: 'FAILING' }, 'disabled after 3 days of failures');
  const { pending } = (await sql<{ pending: number }[]>`select count(*)::int as pending from webhook_messages where endpoint_id = ${ep.id} and status = 'PENDING'`)[0]!;
  t.equal(pending, 0, 'queued retries stopped');
  const notes = await sql`select kind, data from notifications where org_id = ${tenant.orgId}`;
  t.equal(notes.length, 1, 'the owner has an in-app notification');
  t.match(notes[0], { kind: 'webhook.endpoint_disabled', data: { endpointId: ep.id } });
  const { emails } = (await sql<{ emails: number }[]>`select count(*)::int as emails from email_outbox where org_id = ${tenant.orgId} and to_address = 'owner@example.com'`)[0]!;
  t.equal(emails, 1, 'and an email is queued');
  const [mail] = await sql<{ subject: string; textBody: string }[]>`select subject, text_body from email_outbox where org_id = ${tenant.orgId}`;
  t.match(mail!.subject, receiver.url(), 'naming the endpoint');
  t.ok(mail!.textBody.includes(`${node.url}/api/v1/`), 'with the API addresses in full');

  const before = receiver.received.length;
  clock.advance(7 * 24 * 60 * MIN);
  await delivery.tick();
  t.equal(receiver.received.length, before, 'nothing more is sent');
  const missed = await createUser(node, tenant);
  await delivery.tick();
  t.equal(receiver.received.length, before, 'an event while disabled is not sent');
  const [skipped] = await sql`select status, event_type from webhook_attempts where endpoint_id = ${ep.id} and status = 'SKIPPED'`;
  t.match(skipped, { status: 'SKIPPED', eventType: 'user.created' }, '...but logged as SKIPPED, so it can be redelivered');
  t.ok(missed);

  up = true;
  const reply = await app.cluster.ask<{ ok: boolean; status: string }>(webhookActor(ep.id), { type: 'ENABLE' });
  t.match(reply, { ok: true, status: 'ACTIVE' });
  await createUser(node, tenant);
  await delivery.tick();
  t.equal(receiver.received.length, before + 1, 're-enabled: new events are delivered');
  t.equal(receiver.received.at(-1)!.headers['svc-webhook-id'], receiver.received.at(-1)!.body.id);
});

t.test('a 410 from the receiver disables the endpoint at once', async (t) => {
  const { node, receiver, delivery, sql } = await setup(t);
  receiver.answer = () => ({ status: 410 });
  const tenant = await createTenant(node, 'enterprise');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  await createUser(node, tenant);
  await createUser(node, tenant);
  await delivery.tick();
  const [row] = await sql`select status, disabled_reason from webhook_endpoints where id = ${ep.id}`;
  t.match(row, { status: 'DISABLED', disabledReason: 'GONE' });
  const msgs = await sql`select status from webhook_messages where endpoint_id = ${ep.id}`;
  t.ok(msgs.every((m) => m.status === 'FAILED' || m.status === 'CANCELLED'), 'nothing left to retry');
});

t.test('3xx is a failure and is never followed', async (t) => {
  const { node, receiver, delivery, sql } = await setup(t);
  const target = await Receiver.start(t);
  receiver.answer = () => ({ status: 307, headers: { location: target.url() } });
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  await createUser(node, tenant);
  await delivery.tick();
  t.equal(target.received.length, 0, 'the redirect target got nothing');
  const [log] = await sql`select status, status_code, error_kind from webhook_attempts where endpoint_id = ${ep.id}`;
  t.match(log, { status: 'FAILED', statusCode: 307, errorKind: 'redirect' });
});

t.test('bounded concurrency per endpoint', async (t) => {
  const { node, receiver, delivery } = await setup(t, { AULA_WEBHOOK_CONCURRENCY: 3 });
  const other = await Receiver.start(t);
  receiver.answer = () => ({ hang: true });
  const tenant = await createTenant(node, 'pro');
  await addEndpoint(node, tenant.orgId, receiver.url());
  const tenant2 = await createTenant(node, 'pro');
  await addEndpoint(node, tenant2.orgId, other.url());
  for (let i = 0; i < 12; i++) await createUser(node, tenant);
  for (let i = 0; i < 4; i++) await createUser(node, tenant2);
  const ticking = delivery.tick();
  await receiver.waitFor(3);
  await other.waitFor(4);
  t.equal(receiver.inFlight, 3, 'a slow endpoint has 3 sends in flight, no more');
  t.equal(other.received.length, 4, 'and does not hold up another endpoint');
  for (let i = 3; i < 12; i += 3) {
    receiver.release();
    await receiver.waitFor(i + 3);
    t.ok(receiver.inFlight <= 3, `still at most 3 in flight after ${i + 3}`);
  }
  receiver.release();
  await ticking;
  t.equal(receiver.received.length, 12);
  t.equal(receiver.maxInFlight, 3);
});

t.test('retention: the maintenance actor purges the delivery log and events after 30 days, on its durable timer', async (t) => {
  const { clock, node, receiver, delivery, sql } = await setup(t);
  const { app } = node;
  const tenant = await createTenant(node, 'pro');
  const ep = await addEndpoint(node, tenant.orgId, receiver.url());
  await createUser(node, tenant);
  await delivery.tick();
  const t0 = clock.now();
  clock.advance(20 * 24 * 60 * MIN);
  await createUser(node, tenant);
  await delivery.tick();
  await app.cluster.ask('maintenance:retention', { type: 'ENSURE' });
  const count = async () =>
    (await sql<{ a: number; m: number; e: number }[]>`select (select count(*)::int from webhook_attempts where endpoint_id = ${ep.id}) as a,
      (select count(*)::int from webhook_messages where endpoint_id = ${ep.id}) as m,
      (select count(*)::int from outbox where org_id = ${tenant.orgId}) as e`)[0]!;
  t.same(await count(), { a: 2, m: 2, e: 2 });
  clock.set(t0 + 30 * 24 * 60 * MIN - 1);
  await app.timers.tick();
  t.same(await count(), { a: 2, m: 2, e: 2 }, 'nothing is purged before 30 days');
  clock.set(t0 + 30 * 24 * 60 * MIN + 2 * 60 * MIN);
  await app.timers.tick();
  t.same(await count(), { a: 1, m: 1, e: 1 }, 'the first event, its message and its log row are gone after 30 days; the later ones stay');
  const [timer] = await sql<{ dueAt: Date }[]>`select due_at from actor_timers where actor_id = 'maintenance:retention'`;
  t.equal(timer!.dueAt.getTime(), clock.now() + 60 * MIN, 'the next run is armed an hour later');
});
