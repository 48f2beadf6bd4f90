import t from 'tap';
import { createActor } from 'xstate';
import { meetingMachine, NO_SHOW_GRACE_MS } from '../../actors/meeting/meeting.machine.ts';
import { meetingInput } from '../../actors/meeting/meeting.schemas.ts';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();
const input = {
  meetingId: 'mtg_1', orgId: 'org_1', externalMeetingId: null, kind: 'MEETING', title: 'Past', type: 'MEETING', slug: 'abc-defg-hjk',
  hostUserId: 'usr_1', classId: null, externalClassId: null, courseId: null, batchId: null,
  scheduledStart: iso(T0), scheduledEnd: iso(T0 + 3600_000),
  settings: { muteOnEntry: false, lectureMode: false, allowStudentScreenShare: true, recordAutomatically: false, waitingRoom: false },
  planMaxMinutes: 40, status: 'SCHEDULED',
};

function timersOn(notBefore: number | undefined, event: Record<string, unknown>) {
  const actor = createActor(meetingMachine, { input: meetingInput.parse({ ...input, ...(notBefore ? { notBefore: iso(notBefore) } : {}) }) }).start();
  const seen: any[] = [];
  actor.on('*', (e) => seen.push(e));
  actor.send(event as never);
  return { actor, timers: seen.filter((e) => e.type === 'timer.set') };
}

t.test('a meeting scheduled in the past gets its no-show grace from when it was scheduled', async (t) => {
  const now = T0 + 30 * 24 * 3600_000;
  const late = timersOn(now, { type: 'INIT', at: now });
  t.same(late.timers, [{ type: 'timer.set', name: 'no-show', dueAt: now + NO_SHOW_GRACE_MS }]);
  late.actor.send({ type: 'TIMER', name: 'no-show', at: now + 1000 } as never);
  t.equal(late.actor.getSnapshot().context.status, 'SCHEDULED', 'not expired before the grace');
  const onTime = timersOn(undefined, { type: 'INIT', at: T0 });
  t.same(onTime.timers, [{ type: 'timer.set', name: 'no-show', dueAt: T0 + 3600_000 + NO_SHOW_GRACE_MS }], 'otherwise from the scheduled end');
  const moved = timersOn(T0, { type: 'UPDATE', at: now, notBefore: iso(now) });
  t.same(moved.timers, [{ type: 'timer.set', name: 'no-show', dueAt: now + NO_SHOW_GRACE_MS }], 'rescheduling re-arms it');
});
