import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';

// One process and no Redis (the in-process cluster, as `npm start` runs): the same media path, relayed in process.
const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });

t.test('two-way audio on a node without Redis', async (t) => {
  const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Teacher', role: 'TEACHER' })).body.data;
  const student = (await call('POST', '/public/users', { externalId: 's', fullName: 'Student', role: 'STUDENT' })).body.data;
  const m = (await call('POST', '/public/meetings', { title: 'Local', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const host = await enterRoom(t, node, tenant.key, m.id, teacher.id, 'HOST');
  const stu = await enterRoom(t, node, tenant.key, m.id, student.id);
  t.match(host.joined.media, { available: true, rev: 1 });
  t.equal(node.app.services.rooms.placement(m.id)!.nodeId, node.app.cluster.nodeId, 'placed on this node');
  await host.peer.produceAudio({ hz: 440 });
  await stu.peer.produceAudio({ hz: 660 });
  await eventually(() => (host.peer.from(stu.participantId, 'mic')?.peak ?? 0) > 3000 && (stu.peer.from(host.participantId, 'mic')?.peak ?? 0) > 3000, 10_000);
  t.pass('each decodes the other');
});
