import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { shardOf } from '../../src/platform/cluster/cluster.ts';
import { api, createTenant, createTestDatabase, startTestNode } from '../helpers/node.ts';
import { eventually, goLive } from '../helpers/ws.ts';

// Deadlines are rows: when the node that armed them leaves, the node that takes the shard fires them.
const clock = new ManualClock(Date.parse('2026-10-05T10:00:00Z'));
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const a = await startTestNode(t, { databaseUrl, redisPrefix, clock });
const b = await startTestNode(t, { databaseUrl, redisPrefix, clock });
const tenant = await createTenant(a, 'free');
const key = tenant.key;

t.test('a plan-cap timer armed on one node fires on the node that takes over its shard', async (t) => {
  await eventually(() => a.app.cluster.owned().size > 0 && b.app.cluster.owned().size > 0 && a.app.cluster.owned().size + b.app.cluster.owned().size === 64);
  const teacher = (await api(a, 'POST', '/public/users', { key, body: { externalId: 't', fullName: 'T', role: 'TEACHER' } })).body.data;
  // a meeting whose actor lives on node a
  let meeting: any;
  for (let i = 0; i < 50; i++) {
    const m = (await api(a, 'POST', '/public/meetings', { key, body: { title: `M${i}`, type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2026-10-05T10:00:00Z', durationMinutes: 40 } })).body.data;
    if (a.app.cluster.owned().has(shardOf(`meeting:${m.id}`))) {
      meeting = m;
      break;
    }
  }
  t.ok(meeting, 'found a meeting owned by node a');
  const host = await goLive(t, a, key, meeting.id, teacher.id);
  const [timer] = await a.app.sql<{ dueAt: Date }[]>`select due_at from actor_timers where actor_id = ${`meeting:${meeting.id}`} and name = 'plan-cap'`;
  t.equal(timer!.dueAt.toISOString(), '2026-10-05T10:40:00.000Z', 'the free plan caps at 40 minutes');

  await a.close();
  t.ok(await host.waitClosed(), 'node a closed its sockets as it shut down');
  await eventually(() => b.app.cluster.owned().size === 64);
  clock.advance(40 * 60_000 + 1);
  await b.app.timers.tick();
  const m = (await api(b, 'GET', `/public/meetings/${meeting.id}`, { key })).body.data;
  t.match(m, { status: 'ENDED', endedReason: 'PLAN_LIMIT', durationSeconds: 2400 });
  const ended = await b.app.sql<{ data: any }[]>`select data from outbox where type = 'meeting.ended' and data->>'meetingId' = ${meeting.id}`;
  t.equal(ended.length, 1, 'one meeting.ended');
});
