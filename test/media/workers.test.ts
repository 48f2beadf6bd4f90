import t, { type Test } from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom, type MediaPeer } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';

// One node with two mediasoup workers, each worker meant to carry only 2 consumers: a room of three that
// all send spreads its receivers over both workers with pipeToRouter. Then a worker is killed: it is
// replaced, its rooms re-placed, and the clients' media comes back.
const node = await startTestNode(t, { overrides: { AULA_MEDIA_WORKERS: 2, AULA_MEDIA_CONSUMERS_PER_WORKER: 2 } });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Teacher', role: 'TEACHER' })).body.data;
const students = await Promise.all(['a', 'b'].map(async (x) => (await call('POST', '/public/users', { externalId: x, fullName: `Student ${x}`, role: 'STUDENT' })).body.data));

async function enter(t: Test, meetingId: string, userId: string, role: string, hz: number) {
  const p = await enterRoom(t, node, tenant.key, meetingId, userId, role);
  await p.peer.produceAudio({ hz });
  return p;
}

/** Everyone decodes everyone else's tone. */
async function allHear(people: { peer: MediaPeer; participantId: string }[]) {
  for (const p of people) {
    for (const q of people) if (p !== q) await eventually(() => (p.peer.from(q.participantId, 'mic')?.peak ?? 0) > 3000, 10_000);
  }
  return true;
}

t.test('a room larger than a worker should carry spreads its receivers over another worker (pipeToRouter)', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Spread', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const people = [await enter(t, m.id, teacher.id, 'HOST', 400), await enter(t, m.id, students[0].id, 'PARTICIPANT', 500), await enter(t, m.id, students[1].id, 'PARTICIPANT', 600)];
  const room = (await node.app.media!.rooms.room(m.id))!;
  t.equal(room.workers.length, 2, 'the room has a router on each worker');
  t.ok(await allHear(people), 'everyone hears everyone, across the piped routers');
  const load = node.app.media!.pool.all().map((w) => w.consumers);
  t.equal(load.reduce((x, y) => x + y, 0), 6, 'six consumers in all');
  t.ok(load.every((n) => n > 0), `on both workers (${load.join(' + ')})`);
});

t.test('a worker that dies is replaced and its rooms re-placed; clients reconnect their transports', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Worker death', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const people = [await enter(t, m.id, teacher.id, 'HOST', 400), await enter(t, m.id, students[0].id, 'PARTICIPANT', 500)];
  await allHear(people);
  const before = node.app.services.rooms.placement(m.id)!;
  const room = (await node.app.media!.rooms.room(m.id))!;
  const worker = node.app.media!.pool.at(room.workers[0]!)!;
  const oldPid = worker.worker.pid;
  process.kill(oldPid, 'SIGKILL');
  await eventually(() => people.every((p) => p.peer.restarted > 0), 10_000);
  t.ok(await allHear(people), 'media flows again');
  const after = node.app.services.rooms.placement(m.id)!;
  t.equal(after.rev, before.rev + 1, 're-placed through the meeting actor');
  t.not(node.app.media!.pool.at(worker.index)!.worker.pid, oldPid, 'the dead worker was replaced at its index');
  t.equal(node.app.media!.pool.all().length, 2);
});

t.test('a closed producer\'s pipes to the room\'s other routers are forgotten', async (t) => {
  const m = (await call('POST', '/public/meetings', { title: 'Pipes', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const people = [await enter(t, m.id, teacher.id, 'HOST', 400), await enter(t, m.id, students[0].id, 'PARTICIPANT', 500), await enter(t, m.id, students[1].id, 'PARTICIPANT', 600)];
  const room = (await node.app.media!.rooms.room(m.id))!;
  await allHear(people);
  // on a busy machine the receivers that spread the room may come after the third person is in
  await eventually(() => room.workers.length === 2, 10_000);
  t.equal(room.workers.length, 2, 'the room is spread over two routers');
  const pipes = room.inspect().pipes;
  t.ok(pipes > 0, `its microphones are piped (${pipes})`);
  const [, sender, receiver] = people;
  for (let i = 0; i < 5; i++) {
    const camera = await sender!.peer.produceVideo({ simulcast: false });
    await eventually(() => receiver!.peer.from(sender!.participantId, 'camera'), 10_000);
    t.match(await sender!.room.command({ type: 'producer-close', producerId: camera.id }), { ok: true });
    await eventually(() => !receiver!.peer.from(sender!.participantId, 'camera'), 10_000);
  }
  t.equal(room.inspect().pipes, pipes, 'after five cameras came and went, only the microphones\' pipes are left');
});
