import postgres from 'postgres';
import t from 'tap';
import { Receiver } from '../helpers/receiver.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { eventually } from '../helpers/ws.ts';

// The node's database goes away under it, as in a restart: every connection to it is terminated and
// new ones are refused for a while, then allowed again. Promises: /readyz says so at once, requests
// that need the database are refused fast as retryable (503 with Retry-After), nothing refused is
// written, everything recovers without a restart, and every committed event reaches the webhook
// receiver under one id (retries keep it; nothing is sent twice under a new one). Wall clock: serial lane.
const node = await startTestNode(t, { redis: false, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true } });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const receiver = await Receiver.start(t);
const dbName = new URL(node.app.config.AULA_DATABASE_URL!).pathname.slice(1);
const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, onnotice: () => {} });
t.teardown(async () => {
  await admin.unsafe(`alter database ${dbName} allow_connections true`).catch(() => {});
  await admin.end();
});

t.test('the database restarts under a busy node: refused fast while it is down, no event lost or re-identified', async (t) => {
  t.equal((await call('POST', '/public/webhooks', { url: receiver.url(), events: ['user.created'] })).status, 201);
  const committed: string[] = [];
  const create = async (n: string) => {
    const r = await call('POST', '/public/users', { externalId: n, fullName: `User ${n}`, role: 'STUDENT' });
    if (r.status === 201) committed.push(r.body.data.id);
    return r;
  };
  for (let i = 0; i < 20; i++) t.equal((await create(`before-${i}`)).status, 201);

  // down: as a restart looks from here
  await admin.unsafe(`alter database ${dbName} allow_connections false`);
  await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${dbName}`;
  const t0 = performance.now();
  const ready = await api(node, 'GET', '/readyz');
  t.ok(performance.now() - t0 < 500, `/readyz answered in ${Math.round(performance.now() - t0)} ms`);
  t.match(ready, { status: 503, body: { error: { code: 'service_unavailable', details: { database: 'down' } } } }, 'and names the database');
  let refused = 0;
  for (let i = 0; i < 10; i++) {
    const t1 = performance.now();
    const r = await create(`during-${i}`);
    if (r.status === 201) continue; // a connection that outlived the terminate: committed, counted above
    refused++;
    t.equal(r.status, 503, 'refused as unavailable');
    t.equal(r.body.error.code, 'service_unavailable');
    t.equal(r.headers.get('retry-after'), '1');
    t.ok(performance.now() - t1 < 1000, 'and fast');
  }
  t.ok(refused > 0, `${refused} of 10 writes refused while the database was away`);

  // back
  await admin.unsafe(`alter database ${dbName} allow_connections true`);
  t.ok(await eventually(async () => (await api(node, 'GET', '/readyz')).status === 200, 10_000), 'ready again without a restart');
  for (let i = 0; i < 10; i++) t.equal((await create(`after-${i}`)).status, 201);

  // every committed user reaches the receiver under one event id; nothing refused does
  const idsByUser = new Map<string, Set<string>>();
  await eventually(() => {
    idsByUser.clear();
    for (const r of receiver.received) {
      if (r.body?.type !== 'user.created') continue;
      const set = idsByUser.get(r.body.data.userId) ?? new Set<string>();
      set.add(r.body.id);
      idsByUser.set(r.body.data.userId, set);
    }
    return committed.every((id) => idsByUser.has(id));
  }, 30_000).catch(() => t.comment(`received ${receiver.received.length}: ${[...idsByUser.keys()].length} users of ${committed.length}`));
  t.equal(committed.filter((id) => idsByUser.has(id)).length, committed.length, `all ${committed.length} committed users were delivered`);
  t.same([...idsByUser.values()].filter((s) => s.size > 1), [], 'each under exactly one event id');
  t.same([...idsByUser.keys()].filter((id) => !committed.includes(id)), [], 'and nothing that was refused');
  const names = (await call('GET', '/public/users?limit=100')).body.data.map((u: { externalId: string }) => u.externalId);
  t.same(names.filter((n: string) => n.startsWith('during-')).length, committed.length - 30, 'the database holds exactly the writes that were answered 201');
});
