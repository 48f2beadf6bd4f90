import t from 'tap';
import { createActor, type SnapshotFrom } from 'xstate';
import { WAITING_EXPIRY_MS, WAITING_ROOM_MACHINE_VERSION, waitingRoomMachine } from '../../actors/waiting-room/waiting-room.machine.ts';
import { waitingRoomEvent, waitingRoomInput } from '../../actors/waiting-room/waiting-room.schemas.ts';
import type { WaitingRoomEffect, WaitingRoomInput } from '../../actors/waiting-room/waiting-room.types.ts';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const input: WaitingRoomInput = { meetingId: 'mtg_1', orgId: 'org_1', externalMeetingId: 'ext-m-1', kind: 'CLASS' };

function waitingRoom(snapshot?: SnapshotFrom<typeof waitingRoomMachine>) {
  const actor = createActor(waitingRoomMachine, { input: waitingRoomInput.parse(input), ...(snapshot ? { snapshot } : {}) });
  let effects: WaitingRoomEffect[] = [];
  actor.on('*', (e) => effects.push(e));
  actor.start();
  return {
    actor,
    send(event: Record<string, unknown>): WaitingRoomEffect[] {
      effects = [];
      actor.send(waitingRoomEvent.parse(event));
      if (effects.filter((e) => e.type === 'reply').length > 1) throw new Error(`${String(event.type)}: more than one reply`);
      if (actor.getSnapshot().status !== 'active') throw new Error(`${String(event.type)}: the actor is ${actor.getSnapshot().status}`);
      return effects;
    },
    get state() {
      return actor.getSnapshot().value;
    },
    get context() {
      return actor.getSnapshot().context;
    },
  };
}

const users = {
  alice: { id: 'usr_alice', externalId: 's-1', name: 'Alice', email: null, role: 'STUDENT' },
  bob: { id: 'usr_bob', externalId: 's-2', name: 'Bob', email: 'bob@example.com', role: 'STUDENT' },
} as const;

const enqueue = (who: keyof typeof users, at: number, queueId = `wr_${who}`) => ({ type: 'ENQUEUE', queueId, sessionId: `ses_${who}`, user: users[who], at });

const ofType = <T extends WaitingRoomEffect['type']>(effects: WaitingRoomEffect[], type: T) =>
  effects.filter((e): e is Extract<WaitingRoomEffect, { type: T }> => e.type === type);
const reply = (effects: WaitingRoomEffect[]) => ofType(effects, 'reply')[0]?.body as Record<string, any> | undefined;
const hostsList = (effects: WaitingRoomEffect[]) =>
  ofType(effects, 'send')
    .filter((e) => 'role' in e.to)
    .map((e) => (e.message.type === 'waiting-room' ? e.message.entries.map((x) => x.queueId) : []));

t.test('exports', async (t) => {
  t.equal(WAITING_ROOM_MACHINE_VERSION, 1);
  t.equal(WAITING_EXPIRY_MS, 30 * MIN);
});

t.test('ENQUEUE: WAITING, expiry timer, participant.waiting, the hosts see the list, reply', async (t) => {
  const r = waitingRoom();
  t.equal(r.state, 'open');
  const fx = r.send(enqueue('alice', T0));
  t.strictSame(fx, [
    { type: 'timer.set', name: 'expire:wr_alice', dueAt: T0 + WAITING_EXPIRY_MS },
    {
      type: 'outbox',
      eventType: 'participant.waiting',
      data: {
        meetingId: 'mtg_1',
        externalMeetingId: 'ext-m-1',
        kind: 'CLASS',
        queueId: 'wr_alice',
        user: users.alice,
        requestedAt: iso(T0),
        admittedAt: null,
        admittedBy: null,
      },
    },
    {
      type: 'send',
      to: { role: 'hosts' },
      message: { type: 'waiting-room', entries: [{ queueId: 'wr_alice', userId: 'usr_alice', name: 'Alice', role: 'STUDENT', requestedAt: iso(T0) }] },
    },
    { type: 'reply', body: { ok: true, queueId: 'wr_alice', status: 'WAITING', requestedAt: iso(T0), admittedAt: null } },
  ]);
  t.match(r.context.entries.wr_alice, { status: 'WAITING', requestedAt: T0, sessionId: 'ses_alice' });
});

t.test('a second ENQUEUE with the same queueId is a no-op that answers the current status', async (t) => {
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  const fx = r.send(enqueue('alice', T0 + MIN));
  t.same(fx, [{ type: 'reply', body: { ok: true, queueId: 'wr_alice', status: 'WAITING', requestedAt: iso(T0), admittedAt: null } }]);
  t.equal(r.context.entries.wr_alice!.requestedAt, T0);
});

t.test('ADMIT: ADMITTED, expiry cancelled, participant.admitted, the entry is told, idempotent', async (t) => {
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  r.send(enqueue('bob', T0 + 1000));
  const at = T0 + 2 * MIN;
  let fx = r.send({ type: 'ADMIT', queueId: 'wr_alice', by: 'usr_teacher', at });
  t.strictSame(fx, [
    { type: 'timer.cancel', name: 'expire:wr_alice' },
    {
      type: 'outbox',
      eventType: 'participant.admitted',
      data: {
        meetingId: 'mtg_1',
        externalMeetingId: 'ext-m-1',
        kind: 'CLASS',
        queueId: 'wr_alice',
        user: users.alice,
        requestedAt: iso(T0),
        admittedAt: iso(at),
        admittedBy: 'usr_teacher',
      },
    },
    { type: 'send', to: { queue: 'wr_alice' }, message: { type: 'admitted', queueId: 'wr_alice' } },
    {
      type: 'send',
      to: { role: 'hosts' },
      message: { type: 'waiting-room', entries: [{ queueId: 'wr_bob', userId: 'usr_bob', name: 'Bob', role: 'STUDENT', requestedAt: iso(T0 + 1000) }] },
    },
    { type: 'reply', body: { ok: true, queueId: 'wr_alice', status: 'ADMITTED', requestedAt: iso(T0), admittedAt: iso(at) } },
  ]);
  fx = r.send({ type: 'ADMIT', queueId: 'wr_alice', by: 'usr_other', at: at + 1000 });
  t.same(fx, [{ type: 'reply', body: { ok: true, queueId: 'wr_alice', status: 'ADMITTED', requestedAt: iso(T0), admittedAt: iso(at) } }], 'admitting again changes nothing');
  t.equal(r.context.entries.wr_alice!.admittedBy, 'usr_teacher');
  t.match(reply(r.send({ type: 'DENY', queueId: 'wr_alice', by: 'usr_teacher', at })), {
    ok: false,
    error: { code: 'invalid_state', details: { queueId: 'wr_alice', status: 'ADMITTED' } },
  });
});

t.test('DENY: DENIED without a webhook; the entry is told; admitting it later is invalid_state', async (t) => {
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  const fx = r.send({ type: 'DENY', queueId: 'wr_alice', by: 'usr_teacher', at: T0 + MIN });
  t.same(ofType(fx, 'outbox'), [], 'the catalog has no denied event');
  t.same(ofType(fx, 'timer.cancel'), [{ type: 'timer.cancel', name: 'expire:wr_alice' }]);
  t.same(ofType(fx, 'send')[0], { type: 'send', to: { queue: 'wr_alice' }, message: { type: 'denied', queueId: 'wr_alice' } });
  t.same(hostsList(fx), [[]]);
  t.match(reply(fx), { ok: true, status: 'DENIED', admittedAt: null });
  t.match(reply(r.send({ type: 'DENY', queueId: 'wr_alice', by: 'usr_teacher', at: T0 + 2 * MIN })), { ok: true, status: 'DENIED' }, 'denying again is idempotent');
  const admit = r.send({ type: 'ADMIT', queueId: 'wr_alice', by: 'usr_teacher', at: T0 + 2 * MIN });
  t.match(admit, [{ type: 'reply', body: { ok: false, error: { code: 'invalid_state', details: { status: 'DENIED' } } } }]);
  t.equal(admit.length, 1);
});

t.test('the expiry timer makes a WAITING entry EXPIRED; stale or early timers change nothing', async (t) => {
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  r.send(enqueue('bob', T0));
  t.same(r.send({ type: 'TIMER', name: 'expire:wr_alice', at: T0 + WAITING_EXPIRY_MS - 1 }), [], 'early');
  const fx = r.send({ type: 'TIMER', name: 'expire:wr_alice', at: T0 + WAITING_EXPIRY_MS });
  t.same(fx, [
    { type: 'send', to: { queue: 'wr_alice' }, message: { type: 'expired', queueId: 'wr_alice', reason: 'timeout' } },
    {
      type: 'send',
      to: { role: 'hosts' },
      message: { type: 'waiting-room', entries: [{ queueId: 'wr_bob', userId: 'usr_bob', name: 'Bob', role: 'STUDENT', requestedAt: iso(T0) }] },
    },
  ]);
  t.equal(r.context.entries.wr_alice!.status, 'EXPIRED');

  r.send({ type: 'ADMIT', queueId: 'wr_bob', by: 'usr_teacher', at: T0 + MIN });
  t.same(r.send({ type: 'TIMER', name: 'expire:wr_bob', at: T0 + WAITING_EXPIRY_MS }), [], 'an admitted entry does not expire');
  t.same(r.send({ type: 'TIMER', name: 'expire:wr_nobody', at: T0 + WAITING_EXPIRY_MS }), []);
  t.same(r.send({ type: 'TIMER', name: 'something-else', at: T0 + WAITING_EXPIRY_MS }), []);
  t.match(reply(r.send({ type: 'ADMIT', queueId: 'wr_alice', by: 'usr_teacher', at: T0 + WAITING_EXPIRY_MS + 1 })), { error: { code: 'invalid_state' } });
});

t.test('LEAVE: a WAITING entry becomes LEFT; leaving after the outcome changes nothing', async (t) => {
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  r.send(enqueue('bob', T0));
  let fx = r.send({ type: 'LEAVE', queueId: 'wr_alice', at: T0 + MIN });
  t.same(ofType(fx, 'timer.cancel'), [{ type: 'timer.cancel', name: 'expire:wr_alice' }]);
  t.same(hostsList(fx), [['wr_bob']]);
  t.same(ofType(fx, 'send').length, 1, 'only the hosts hear it');
  t.match(reply(fx), { ok: true, status: 'LEFT' });
  r.send({ type: 'ADMIT', queueId: 'wr_bob', by: 'usr_teacher', at: T0 + MIN });
  fx = r.send({ type: 'LEAVE', queueId: 'wr_bob', at: T0 + 2 * MIN });
  t.same(fx, [{ type: 'reply', body: { ok: true, queueId: 'wr_bob', status: 'ADMITTED', requestedAt: iso(T0), admittedAt: iso(T0 + MIN) } }]);
});

t.test('STATUS answers the entry; unknown queueIds are not_found everywhere', async (t) => {
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  t.same(r.send({ type: 'STATUS', queueId: 'wr_alice', at: T0 + 1 }), [
    { type: 'reply', body: { ok: true, queueId: 'wr_alice', status: 'WAITING', requestedAt: iso(T0), admittedAt: null } },
  ]);
  for (const type of ['STATUS', 'LEAVE', 'ADMIT', 'DENY']) {
    const fx = r.send({ type, queueId: 'wr_ghost', by: 'usr_teacher', at: T0 });
    t.same(fx, [{ type: 'reply', body: { ok: false, error: { code: 'not_found', message: 'No waiting-room entry with this queueId.', details: { queueId: 'wr_ghost' } } } }], type);
  }
});

t.test('MEETING_ENDED: WAITING entries expire and are told why; the room closes but keeps answering', async (t) => {
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  r.send(enqueue('bob', T0 + 1000));
  r.send({ type: 'ADMIT', queueId: 'wr_bob', by: 'usr_teacher', at: T0 + MIN });
  let fx = r.send({ type: 'MEETING_ENDED', at: T0 + 10 * MIN });
  t.same(fx, [
    { type: 'timer.cancel', name: 'expire:wr_alice' },
    { type: 'send', to: { queue: 'wr_alice' }, message: { type: 'expired', queueId: 'wr_alice', reason: 'meeting_ended' } },
    { type: 'reply', body: { ok: true } },
  ]);
  t.equal(r.state, 'closed');
  t.ok(r.actor.getSnapshot().hasTag('closed'));
  t.equal(r.actor.getSnapshot().status, 'active');
  t.match(reply(r.send({ type: 'STATUS', queueId: 'wr_alice', at: T0 + 11 * MIN })), { ok: true, status: 'EXPIRED' });
  t.match(reply(r.send({ type: 'STATUS', queueId: 'wr_bob', at: T0 + 11 * MIN })), { ok: true, status: 'ADMITTED' });
  fx = r.send(enqueue('alice', T0 + 11 * MIN, 'wr_alice_2'));
  t.same(fx, [{ type: 'reply', body: { ok: false, error: { code: 'meeting_ended', message: 'The meeting has ended or was cancelled.', details: {} } } }]);
  t.match(reply(r.send(enqueue('alice', T0 + 11 * MIN))), { ok: true, status: 'EXPIRED' }, 'a repeated ENQUEUE still answers its entry');
  t.match(reply(r.send({ type: 'ADMIT', queueId: 'wr_alice', by: 'usr_teacher', at: T0 + 11 * MIN })), { error: { code: 'invalid_state' } });
  t.match(reply(r.send({ type: 'ADMIT', queueId: 'wr_bob', by: 'usr_teacher', at: T0 + 11 * MIN })), { ok: true, status: 'ADMITTED' });
  t.same(r.send({ type: 'TIMER', name: 'expire:wr_alice', at: T0 + WAITING_EXPIRY_MS }), []);
  t.same(r.send({ type: 'MEETING_ENDED', at: T0 + 12 * MIN }), [{ type: 'reply', body: { ok: true } }]);
});

t.test('snapshot round trip: JSON, restore, continue with identical results', async (t) => {
  const a = waitingRoom();
  a.send(enqueue('alice', T0));
  a.send(enqueue('bob', T0 + 1000));
  a.send({ type: 'DENY', queueId: 'wr_bob', by: 'usr_teacher', at: T0 + MIN });
  const json = JSON.stringify(a.actor.getPersistedSnapshot());
  t.strictSame(JSON.parse(json).context, a.context, 'the context is plain JSON');
  const b = waitingRoom(JSON.parse(json));
  t.equal(b.state, 'open');
  const rest: Record<string, unknown>[] = [
    { type: 'STATUS', queueId: 'wr_bob', at: T0 + 2 * MIN },
    enqueue('alice', T0 + 3 * MIN, 'wr_alice_tab2'),
    { type: 'ADMIT', queueId: 'wr_alice', by: 'usr_teacher', at: T0 + 4 * MIN },
    { type: 'TIMER', name: 'expire:wr_alice_tab2', at: T0 + 3 * MIN + WAITING_EXPIRY_MS },
    { type: 'MEETING_ENDED', at: T0 + 40 * MIN },
  ];
  for (const event of rest) t.strictSame(b.send(event), a.send(event), String(event.type));
  t.equal(b.state, 'closed');
  t.strictSame(b.actor.getPersistedSnapshot(), a.actor.getPersistedSnapshot());
});

t.test('the machine never reads the clock', async (t) => {
  const now = Date.now;
  Date.now = () => {
    throw new Error('Date.now() called');
  };
  t.teardown(() => {
    Date.now = now;
  });
  const r = waitingRoom();
  r.send(enqueue('alice', T0));
  r.send(enqueue('bob', T0));
  r.send({ type: 'ADMIT', queueId: 'wr_alice', by: 'usr_teacher', at: T0 + MIN });
  r.send({ type: 'TIMER', name: 'expire:wr_bob', at: T0 + WAITING_EXPIRY_MS });
  r.send({ type: 'MEETING_ENDED', at: T0 + 40 * MIN });
  t.equal(r.state, 'closed');
});

t.test('zod schemas refuse malformed events and input', async (t) => {
  t.ok(waitingRoomEvent.safeParse(enqueue('alice', T0)).success);
  const bad: [string, unknown][] = [
    ['unknown type', { type: 'KICK', queueId: 'q', at: T0 }],
    ['ENQUEUE without user', { type: 'ENQUEUE', queueId: 'q', sessionId: 's', at: T0 }],
    ['ENQUEUE with a bad user', { ...enqueue('alice', T0), user: { name: 'x' } }],
    ['ADMIT without by', { type: 'ADMIT', queueId: 'q', at: T0 }],
    ['DENY with an empty queueId', { type: 'DENY', queueId: '', by: 'u', at: T0 }],
    ['STATUS without at', { type: 'STATUS', queueId: 'q' }],
    ['MEETING_ENDED with at as a date string', { type: 'MEETING_ENDED', at: iso(T0) }],
    ['TIMER without name', { type: 'TIMER', at: T0 }],
  ];
  for (const [name, value] of bad) t.notOk(waitingRoomEvent.safeParse(value).success, name);
  t.notOk(waitingRoomInput.safeParse({ ...input, kind: 'WEBINAR' }).success);
});
