// Prometheus metrics and the operator's log lines, from real nodes: HTTP by route pattern, rate-limit
// refusals, webhook outcomes and lag, room sockets and media, the token, the port of their own.
import { parseTrustProxy } from '../../src/platform/client-address.ts';
import t from 'tap';
import { assertError } from '../helpers/assert.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { memoryLogger } from '../helpers/logs.ts';
import { Receiver } from '../helpers/receiver.ts';
import { goLive } from '../helpers/ws.ts';

/** Every log line the node writes, parsed. */
const { log: logger, lines } = memoryLogger();
const node = await startTestNode(t, { logger, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true, AULA_TRUST_PROXY: parseTrustProxy('1') } });
const tenant = await createTenant(node);

/** The value of one sample of the scrape, or null. */
async function sample(name: string, labels: Record<string, string> = {}, url = `${node.url}/metrics`, auth?: string): Promise<number | null> {
  const res = await fetch(url, auth ? { headers: { authorization: auth } } : {});
  const text = await res.text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return null;
}

t.test('GET /metrics: Prometheus text; requests counted by route pattern, method and status', async (t) => {
  const res = await fetch(`${node.url}/metrics`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0.0.4/);
  const text = await res.text();
  t.match(text, /# TYPE aula_http_requests_total counter/);
  t.match(text, /aula_process_cpu_seconds_total/, 'the process defaults too');
  const before = (await sample('aula_http_requests_total', { route: '/api/v1/public/users/:id', method: 'GET', status: '404' })) ?? 0;
  for (const id of ['usr_01kav9ft00m2cy489pkcsrq7n8', 'someone-else']) t.equal((await api(node, 'GET', `/public/users/${id}`, { key: tenant.key })).status, 404);
  t.equal(await sample('aula_http_requests_total', { route: '/api/v1/public/users/:id', method: 'GET', status: '404' }), before + 2, 'two requests, one series: the pattern, not the path');
  t.ok(((await sample('aula_http_request_duration_seconds_count', { route: '/api/v1/public/users/:id', method: 'GET' })) ?? 0) >= 2);
  await api(node, 'GET', '/api/v1/no/such/route/42');
  t.ok(((await sample('aula_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' })) ?? 0) >= 1, 'what no route matched shares one label');
  t.notOk((await (await fetch(`${node.url}/metrics`)).text()).includes('/no/such/route'), 'raw paths never become labels');
});

t.test('rate-limit refusals are counted by limit', async (t) => {
  // a node of its own: the refusal bars this address from exchanging for a minute
  const limited = await startTestNode(t, { redis: false });
  let refused = 0;
  for (let i = 0; i < 301 && !refused; i++) {
    const r = await api(limited, 'POST', '/join-tokens/exchange', { body: { token: 'jt_x', deviceId: 'd' } });
    if (r.status === 429) refused++;
  }
  t.equal(refused, 1, 'the per-address exchange limit refused');
  t.equal(await sample('aula_rate_limit_refusals_total', { limit: 'exchange' }, `${limited.url}/metrics`), 1);
});

t.test('webhook deliveries by outcome, and the lag of first attempts; each event committed is logged with its ids', async (t) => {
  const receiver = await Receiver.start(t);
  t.equal((await api(node, 'POST', '/public/webhooks', { key: tenant.key, body: { url: receiver.url(), events: ['user.created'] } })).status, 201);
  const created = await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'metric-1', fullName: 'Mia Metric', role: 'STUDENT' } });
  await node.app.delivery.tick();
  await receiver.waitFor(1);
  t.ok(((await sample('aula_webhook_deliveries_total', { outcome: 'succeeded' })) ?? 0) >= 1);
  t.ok(((await sample('aula_webhook_delivery_lag_seconds_count')) ?? 0) >= 1);
  const event = lines.find((l) => l.msg === 'event' && l.type === 'user.created' && l.userId === created.body.data.id);
  t.match(event, { level: 30, orgId: tenant.orgId, eventId: /^evt_/ }, 'an info line per committed event');
  t.notOk(JSON.stringify(event).includes('Mia Metric'), 'ids, never names');
});

t.test('a live room shows in the socket and media gauges; requests are logged with their id', async (t) => {
  const host = (await api(node, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'metric-host', fullName: 'Hal', role: 'TEACHER' } })).body.data;
  const m = (await api(node, 'POST', '/public/meetings', { key: tenant.key, body: { title: 'Gauges', type: 'MEETING', hostUserId: host.id, scheduledStart: new Date().toISOString(), durationMinutes: 30 } })).body.data;
  const client = await goLive(t, node, tenant.key, m.id, host.id);
  t.ok(((await sample('aula_room_sockets')) ?? 0) >= 1, 'a socket open');
  // media opens when a participant asks for it (test/live has those); here the gauges are there, per worker too
  t.not(await sample('aula_media_rooms'), null);
  t.not(await sample('aula_media_worker_cpu_ratio', { worker: '0' }), null, 'the node\'s mediasoup worker');
  t.ok(((await sample('aula_cluster_shards_owned')) ?? 0) > 0);
  t.ok(((await sample('aula_actor_event_duration_seconds_count', { actor: 'meeting' })) ?? 0) >= 1, 'the meeting actor\'s events are timed');
  t.ok(lines.some((l) => l.msg === 'event' && l.type === 'participant.joined' && l.meetingId === m.id), 'the join is in the log');
  const r = await api(node, 'GET', `/public/meetings/${m.id}`, { key: tenant.key, headers: { 'x-request-id': 'trace-me-1' } });
  t.equal(r.headers.get('x-request-id'), 'trace-me-1');
  t.ok(lines.some((l) => l.msg === 'request' && l.reqId === 'trace-me-1' && l.status === 200), 'the request line carries its id');
  client.close();
});

t.test('AULA_METRICS_TOKEN: the scrape needs the bearer token', async (t) => {
  const guarded = await startTestNode(t, { redis: false, overrides: { AULA_METRICS_TOKEN: 'a-metrics-token-of-some-length' } });
  assertError(t, await api(guarded, 'GET', '/metrics'), 401, 'metrics_token_invalid');
  assertError(t, await api(guarded, 'GET', '/metrics', { headers: { authorization: 'Bearer wrong-token-of-some-length' } }), 401, 'metrics_token_invalid');
  const ok = await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer a-metrics-token-of-some-length' } });
  t.equal(ok.status, 200);
  t.match(await ok.text(), /aula_http_requests_total/);
});

t.test('AULA_METRICS_PORT: the scrape on a port of its own, and not on the API port', async (t) => {
  const apart = await startTestNode(t, { redis: false, overrides: { AULA_METRICS_PORT: 0 } });
  t.ok(apart.metricsPort && apart.metricsPort !== apart.port);
  assertError(t, await api(apart, 'GET', '/metrics'), 404, 'route_not_found');
  const res = await fetch(`http://127.0.0.1:${apart.metricsPort}/metrics`);
  t.equal(res.status, 200);
  t.match(await res.text(), /aula_cluster_shards_owned \d+/);
  const other = await fetch(`http://127.0.0.1:${apart.metricsPort}/api/v1/public/users`);
  t.equal(other.status, 404);
  t.match(await other.json(), { error: { code: 'route_not_found' } });
});
