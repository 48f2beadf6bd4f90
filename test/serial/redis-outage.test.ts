// Redis killed under a node with a live room, then started again on the same port. Wall-clock bounds: serial lane.
import type { ChildProcess } from 'node:child_process';
import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom, type MediaPeer } from '../helpers/media.ts';
import { freePort, startRedisServer } from '../helpers/redis-server.ts';
import { connect, eventually } from '../helpers/ws.ts';

const port = await freePort();
let redis: ChildProcess | null = null;
const startRedis = async () => void (redis = await startRedisServer(t, port));
await startRedis();
const node = await startTestNode(t, { overrides: { AULA_REDIS_URL: `redis://127.0.0.1:${port}` } });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 'o-t', fullName: 'Otto Teacher', role: 'TEACHER' })).body.data;
const m = (await call('POST', '/public/meetings', { title: 'Outage', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 30 })).body.data;

const student = (await call('POST', '/public/users', { externalId: 'o-s', fullName: 'Olga Student', role: 'STUDENT' })).body.data;
const late = (await call('POST', '/public/users', { externalId: 'o-l', fullName: 'Lars Late', role: 'STUDENT' })).body.data;

async function flowing(peer: MediaPeer): Promise<boolean> {
  const before = (await peer.bytes()).received;
  await new Promise((r) => setTimeout(r, 1000));
  return (await peer.bytes()).received > before + 2000;
}

t.test('Redis gone while a room is live: /readyz says so at once, the room keeps its media, and all recovers when Redis is back', async (t) => {
  t.equal((await api(node, 'GET', '/readyz')).status, 200);
  const host = await enterRoom(t, node, tenant.key, m.id, teacher.id, 'HOST');
  const stu = await enterRoom(t, node, tenant.key, m.id, student.id);
  await host.peer.produceAudio();
  await stu.peer.produceAudio();
  t.ok(await eventually(() => flowing(stu.peer), 10_000), 'media flows before');

  redis!.kill('SIGKILL');
  await new Promise((r) => redis!.once('exit', r));
  const t0 = performance.now();
  const ready = await api(node, 'GET', '/readyz');
  const readyMs = performance.now() - t0;
  t.equal(ready.status, 503);
  t.match(ready.body.error, { code: 'service_unavailable', details: { database: 'ok', redis: 'down' } }, 'it names what is down');
  t.equal(ready.headers.get('retry-after'), '1', 'a 503 says when to retry');
  t.ok(readyMs < 500, `/readyz answered in ${Math.round(readyMs)} ms`);

  await new Promise((r) => setTimeout(r, 3000)); // past the shard leases' step-down
  const t1 = performance.now();
  const again = await api(node, 'GET', '/readyz');
  t.ok(performance.now() - t1 < 500 && again.status === 503, 'still quick, still down');
  t.ok(await flowing(stu.peer), 'the live room keeps its media (student hears)');
  t.ok(await flowing(host.peer), 'both ways');
  t.equal((await call('GET', '/public/users')).status, 200, 'requests that do not need Redis are answered');
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: late.id })).body.data;
  const t2 = performance.now();
  const ex = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'late-1' } });
  const exMs = performance.now() - t2;
  t.comment(`exchange during the outage: ${ex.status} ${ex.body.error?.code ?? ''} in ${Math.round(exMs)} ms`);
  t.ok(ex.status === 200 || (ex.status === 503 && ex.headers.get('retry-after') !== null), 'a join during the outage is answered, or refused as retryable (503 with Retry-After)');
  t.ok(exMs < 2000, 'and fast');
  if (ex.status === 200) {
    const t3 = performance.now();
    const ws = await connect(t, ex.body.data.mediaUrl, ex.body.data.mediaToken);
    const first = await ws.next((msg) => msg.type === 'joined' || msg.type === 'error', 5000);
    t.comment(`room join during the outage: ${first.type} ${first.error?.code ?? ''} in ${Math.round(performance.now() - t3)} ms`);
    t.ok(first.type === 'joined' || first.error?.code === 'actor_unavailable' || first.error?.code === 'service_unavailable', 'the room socket joins, or says plainly it cannot now');
    ws.ws.close();
  }

  await startRedis();
  t.ok(await eventually(async () => (await api(node, 'GET', '/readyz')).status === 200, 15_000), 'ready again without a restart');
  t.ok(await flowing(stu.peer), 'the room still has its media');
  const link2 = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: late.id })).body.data;
  const ex2 = await eventually(async () => {
    const r = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link2.token, deviceId: 'late-2' } });
    return r.status === 200 ? r : null;
  }, 15_000);
  t.ok(ex2, 'joins work again');
});
