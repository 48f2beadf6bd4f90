import t from 'tap';
import { meetingEvent } from '../../actors/meeting/meeting.schemas.ts';
import { waitingRoomEvent } from '../../actors/waiting-room/waiting-room.schemas.ts';
import { AppError } from '../../src/core/errors.ts';
import { createTenant, startTestNode } from '../helpers/node.ts';

const node = await startTestNode(t, { redis: false });
const { rooms } = node.app;

t.test('the typed clients have one method per event of the actor\'s schema', async (t) => {
  const camel = (s: string) => s.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  t.same(Object.keys(rooms.meeting).filter((k) => k !== 'send').sort(), meetingEvent.options.map((o) => camel(o.shape.type.value)).sort());
  t.same(Object.keys(rooms.waitingRoom).filter((k) => k !== 'send').sort(), waitingRoomEvent.options.map((o) => camel(o.shape.type.value)).sort());
});

t.test('a call is checked against the schema before it leaves; a refusal is thrown with the machine\'s code', async (t) => {
  await t.rejects((rooms.meeting.join as (id: string, a: unknown) => Promise<unknown>)('mtg_x', { participantId: 5 }), /bad JOIN event/);
  await t.rejects(rooms.meeting.roomState('mtg_nope'), { code: 'not_found' }, 'no such meeting');
  const tenant = await createTenant(node);
  const [teacher] = await node.app.sql<{ id: string }[]>`insert into users (id, org_id, external_id, full_name, role, status, created_at, updated_at)
    values ('usr_01jtest0000000000000000000', ${tenant.orgId}, 't', 'T', 'TEACHER', 'ACTIVE', now(), now()) returning id`;
  const m = await node.app.services.meetings.create(node.app.sql, tenant.orgId, { title: 'Typed', type: 'MEETING', hostUserId: teacher!.id, scheduledStart: new Date().toISOString(), durationMinutes: 30 });
  const state = await rooms.meeting.roomState(m.id);
  t.match(state, { ok: true, status: 'SCHEDULED', rev: 0, roster: [], media: null }, 'a typed reply');
  const err = await rooms.meeting.mute(m.id, { participantId: 'par_x', by: 'par_y' }).catch((e: unknown) => e);
  t.ok(err instanceof AppError);
  t.match(err, { code: 'invalid_state', status: 409, details: { status: 'SCHEDULED' } }, 'the refusal keeps its code, status and details');
});
