import { randomBytes } from 'node:crypto';
import t from 'tap';
import { shardOf } from '../../src/platform/cluster/cluster.ts';
import { api, createTenant, createTestDatabase, REDIS_URL, startTestNode, TEST_SECRET } from '../helpers/node.ts';
import { enterRoom, type MediaPeer } from '../helpers/media.ts';
import { spawnNode, type NodeProcess } from '../helpers/process.ts';
import { eventually } from '../helpers/ws.ts';

// Three nodes on one Postgres and one Redis. Node a (this process) has no mediasoup worker: it holds
// the sockets and the meeting's actor, so a room's media must live on node b or c (each a real process
// with one worker), and every signaling request crosses the cluster bus. Then the process that forwards
// the media is killed with SIGKILL, and the room's media must come back on the other one by itself.
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const a = await startTestNode(t, { databaseUrl, redisPrefix, overrides: { AULA_MEDIA_WORKERS: 0 } });
const env = {
  AULA_DATABASE_URL: databaseUrl,
  AULA_REDIS_URL: REDIS_URL,
  AULA_REDIS_PREFIX: redisPrefix,
  AULA_SECRET_KEY: TEST_SECRET,
  AULA_MEDIA_WORKERS: '1',
  AULA_MEDIA_LISTEN_IP: '127.0.0.1',
  AULA_LOG_LEVEL: 'info',
};
const media = await Promise.all([spawnNode(t, env), spawnNode(t, env)]);
const nodeIdOf = (m: NodeProcess) => m.logs.find((l) => l.msg === 'cluster node started')!.nodeId as string;
const tenant = await createTenant(a);
const call = (method: string, path: string, body?: unknown) => api(a, method, path, { key: tenant.key, ...(body ? { body } : {}) });

t.test('socket on one node, media on another; kill -9 of the media node and media is back within 5 s', async (t) => {
  await eventually(() => a.app.mediaLoad.candidate() !== null && media.every((m) => a.app.mediaLoad.alive(nodeIdOf(m))), 10_000);
  const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Teacher', role: 'TEACHER' })).body.data;
  const student = (await call('POST', '/public/users', { externalId: 's', fullName: 'Student', role: 'STUDENT' })).body.data;
  // The meeting's actor on node a, so the failover measured is the media's alone (an actor whose node
  // dies comes back with its shard, docs/live-rooms.md).
  let meeting: { id: string } | null = null;
  await eventually(async () => {
    const m = (await call('POST', '/public/meetings', { title: 'Failover', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
    if (a.app.cluster.owned().has(shardOf(`meeting:${m.id}`))) meeting = m;
    return meeting;
  }, 20_000);
  const meetingId = meeting!.id;

  const enter = async (userId: string, role: string) => {
    const p = await enterRoom(t, a, tenant.key, meetingId, userId, role);
    await p.peer.produceAudio({ hz: 500 });
    return p;
  };
  const host = await enter(teacher.id, 'HOST');
  const stu = await enter(student.id, 'PARTICIPANT');
  const placed = a.app.services.rooms.placement(meetingId)!;
  const hosting = media.find((m) => nodeIdOf(m) === placed.nodeId)!;
  t.ok(hosting, 'the room\'s media is on one of the media nodes, not on the node holding the sockets');
  t.equal(a.app.media, null);

  const hears = async (p: MediaPeer, from: string) => {
    await eventually(() => (p.from(from, 'mic')?.peak ?? 0) > 3000, 10_000);
    return true;
  };
  t.ok(await hears(host.peer, stu.participantId) && (await hears(stu.peer, host.participantId)), 'two-way audio with signaling relayed across nodes');

  const killedAt = performance.now();
  hosting.proc.kill('SIGKILL');
  await eventually(() => host.peer.restarted > 0 && stu.peer.restarted > 0, 10_000);
  await Promise.all([hears(host.peer, stu.participantId), hears(stu.peer, host.participantId)]);
  const backMs = performance.now() - killedAt;
  t.comment(`media back ${Math.round(backMs)} ms after kill -9 of the media node`);
  const now = a.app.services.rooms.placement(meetingId)!;
  t.not(now.nodeId, placed.nodeId, 'the room was re-placed on the other media node');
  t.equal(now.rev, placed.rev + 1);
  t.ok(backMs < 5000, `decoded audio flows both ways again within 5 s (${Math.round(backMs)} ms)`);
});
