import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { connect, eventually } from '../helpers/ws.ts';

// A node's sockets record themselves in Redis as they open and close, fire and forget. When the
// connection to Redis has ended (a node closing while its last sockets go, or Redis gone), those
// commands are refused; a refusal nobody handles would end the whole process.
const unhandled: unknown[] = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason));

const node = await startTestNode(t);
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });

t.test('a room socket closing after the Redis connection ended is forgotten without an unhandled rejection', async (t) => {
  const teacher = (await call('POST', '/public/users', { externalId: 'teacher', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
  const meeting = (await call('POST', '/public/meetings', { title: 'Physics', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 30 })).body.data;
  const link = (await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId: teacher.id, role: 'HOST' })).body.data;
  const session = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'tab-1' } })).body.data;
  const host = await connect(t, session.mediaUrl, session.mediaToken);
  await host.type('joined');
  t.equal(node.gateway.connections, 1);

  node.app.redis!.disconnect();
  host.ws.terminate();
  await eventually(() => node.gateway.connections === 0);
  await new Promise((r) => setTimeout(r, 100)); // auto-pipelined commands are sent on a later turn
  t.same(unhandled.map(String), [], 'no unhandled rejection');
});
