import postgres from 'postgres';
import t from 'tap';
import { assign, createActor, emit, setup } from 'xstate';
import { z } from 'zod';
import { meetingMachine } from '../../actors/meeting/meeting.machine.ts';
import { forgetsHistory } from '../../actors/meeting/meeting.views.ts';
import { meetingEvent, meetingInput } from '../../actors/meeting/meeting.schemas.ts';
import type { MeetingContext } from '../../actors/meeting/meeting.types.ts';
import { ManualClock } from '../../src/core/clock.ts';
import { acquireEpoch } from '../../src/platform/cluster/fencing.ts';
import { pgOptions, type Sql } from '../../src/platform/db/index.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { createLogger } from '../../src/platform/logger.ts';
import { Outbox } from '../../src/platform/outbox.ts';
import { ActorRuntime, defineActor, type ActorDefinition } from '../../src/platform/runtime/actor-runtime.ts';
import { COMPACT_EVERY, readActorState } from '../../src/platform/runtime/actor-state.ts';
import { createOrg } from '../../src/services/orgs.ts';
import { createTestDatabase } from '../helpers/node.ts';

// ActorRuntime's persisted state on a real Postgres: each transition writes a delta (a JSON Patch against the
// state persisted before it), compaction writes the whole state and deletes the deltas; loading replays the
// deltas after the snapshot in order. What Postgres holds always equals what the actor holds in memory.
const sql = postgres(await createTestDatabase(t), { ...pgOptions, max: 4 }) as unknown as Sql;
t.teardown(() => sql.end({ timeout: 1 }));
await migrate(sql);
const clock = new ManualClock(Date.parse('2026-11-26T09:00:00Z'));
const log = createLogger({ AULA_LOG_LEVEL: 'silent' });
const org = await createOrg(sql, clock, { name: 'Deltas School', plan: 'pro' });

// ---- a small actor: people by id, a list, and a large constant (so deltas are small beside the snapshot)
const roster = setup({
  types: {} as { context: { people: Record<string, { name: string; hand: boolean }>; notes: string[]; padding: string }; events: { type: string; id?: string; name?: string; text?: string; at: number } },
}).createMachine({
  context: () => ({ people: {}, notes: [], padding: 'x'.repeat(20_000) }),
  on: {
    ADD: { actions: [assign({ people: ({ context, event }) => ({ ...context.people, [event.id!]: { name: event.name!, hand: false } }) }), emit(({ context }) => ({ type: 'reply', body: { ok: true, people: Object.keys(context.people).length } }))] },
    HAND: { actions: assign({ people: ({ context, event }) => ({ ...context.people, [event.id!]: { ...context.people[event.id!]!, hand: !context.people[event.id!]!.hand } }) }) },
    REMOVE: { actions: assign({ people: ({ context, event }) => Object.fromEntries(Object.entries(context.people).filter(([k]) => k !== event.id)) }) },
    NOTE: { actions: assign({ notes: ({ context, event }) => [...context.notes, event.text!].slice(-5) }) },
    FORGET: { actions: assign({ notes: () => [] }) },
    NOOP: { actions: emit(({ context }) => ({ type: 'reply', body: { ok: true, people: Object.keys(context.people).length } })) },
  },
});
const rosterEvents = z.object({ type: z.enum(['ADD', 'HAND', 'REMOVE', 'NOTE', 'FORGET', 'NOOP']), id: z.string().optional(), name: z.string().optional(), text: z.string().optional(), at: z.number() });
const rosterDef = (version = 1, machine = roster) =>
  defineActor<{ people: Record<string, unknown> }, { type: string }, Record<string, unknown>>({
    name: 'roster',
    version,
    machine,
    events: rosterEvents,
    input: async () => ({}),
    orgOf: () => org.id,
    compact: (event) => event.type === 'FORGET',
  });

function runtime(definitions: ActorDefinition[] = [rosterDef()]): ActorRuntime {
  return new ActorRuntime({ sql, clock, log, definitions, outbox: new Outbox(log), sink: { deliver() {} }, send: async () => {}, publish: async () => {} });
}
let shardN = 0;
/** A shard of the test's own and its epoch, as a node that acquired it holds it. */
async function shard(): Promise<{ shard: number; epoch: number }> {
  const s = shardN++;
  return { shard: s, epoch: await acquireEpoch(sql, s, `test-node-${s}`) };
}
async function rows(actorId: string): Promise<{ snapshotSeq: number; deltas: number[] }> {
  const [s] = await sql<{ seq: string }[]>`select seq::text from actor_snapshots where actor_id = ${actorId}`;
  const d = await sql<{ seq: string }[]>`select seq::text from actor_deltas where actor_id = ${actorId} order by actor_deltas.seq`;
  return { snapshotSeq: s ? Number(s.seq) : -1, deltas: d.map((r) => Number(r.seq)) };
}
/** What Postgres holds of the actor, replayed, as JSON. */
async function stored(actorId: string): Promise<unknown> {
  return (await readActorState(sql, actorId))!.state;
}
/** The same machine in memory beside the runtime, fed the same events: what the actor holds. */
function shadow(machine = roster as typeof roster, input?: unknown) {
  const a = createActor(machine, input === undefined ? {} : { input: input as never });
  a.start();
  return { send: (e: Record<string, unknown>) => a.send(e as never), json: () => JSON.parse(JSON.stringify(a.getPersistedSnapshot())) };
}
/** Deterministic events over a roster of up to 30 people. */
function* script(n: number, seed = 7): Generator<Record<string, unknown>> {
  let s = seed;
  const rnd = (k: number) => ((s = (s * 1103515245 + 12345) >>> 0) % k);
  const present = new Set<string>();
  for (let i = 0; i < n; i++) {
    const r = rnd(10);
    const id = `p${rnd(30)}`;
    if (r < 4 || !present.size) {
      present.add(id);
      yield { type: 'ADD', id, name: `Person ${id} ${i}` };
    } else if (r < 6) yield { type: 'HAND', id: [...present][rnd(present.size)] };
    else if (r < 7) {
      const gone = [...present][rnd(present.size)]!;
      present.delete(gone);
      yield { type: 'REMOVE', id: gone };
    } else if (r < 9) yield { type: 'NOTE', text: `note ${i}` };
    else yield { type: 'NOOP' };
  }
}

t.test('replay equals the actor in memory, through many transitions and compactions', async (t) => {
  const rt = runtime();
  const { shard: sh, epoch } = await shard();
  const id = 'roster:many';
  const mirror = shadow();
  let compactions = 0;
  let last = -1;
  for (const e of script(300)) {
    const event = { ...e, at: clock.now() };
    await rt.handle({ actorId: id, event: e }, sh, epoch);
    mirror.send(event);
    const r = await rows(id);
    if (r.snapshotSeq !== last) compactions++;
    last = r.snapshotSeq;
    t.ok(r.deltas.length < COMPACT_EVERY, 'never COMPACT_EVERY deltas after the snapshot');
    if (r.deltas.length) t.same(r.deltas, Array.from({ length: r.deltas.length }, (_, k) => r.snapshotSeq + 1 + k), 'deltas numbered on from the snapshot, no gap');
  }
  t.ok(compactions >= 300 / COMPACT_EVERY, `compacted along the way (${compactions} snapshots written)`);
  t.ok((await rows(id)).deltas.length > 0, 'deltas pending at the end');
  t.same(await stored(id), mirror.json(), 'snapshot + deltas = the actor in memory');
  rt.stopAll();
});

t.test('compaction at COMPACT_EVERY: the snapshot row takes the state, the deltas go, in one transaction', async (t) => {
  const rt = runtime();
  const { shard: sh, epoch } = await shard();
  const id = 'roster:compact';
  await rt.handle({ actorId: id, event: { type: 'ADD', id: 'a', name: 'Ada' } }, sh, epoch);
  t.same(await rows(id), { snapshotSeq: 1, deltas: [] }, 'a new actor writes its whole snapshot first');
  for (let i = 2; i < COMPACT_EVERY + 1; i++) await rt.handle({ actorId: id, event: { type: 'NOTE', text: `n${i}` } }, sh, epoch);
  t.same(await rows(id), { snapshotSeq: 1, deltas: Array.from({ length: COMPACT_EVERY - 1 }, (_, k) => k + 2) }, `${COMPACT_EVERY - 1} deltas after it`);
  await rt.handle({ actorId: id, event: { type: 'NOTE', text: 'the last' } }, sh, epoch);
  t.same(await rows(id), { snapshotSeq: COMPACT_EVERY + 1, deltas: [] }, `the ${COMPACT_EVERY}th transition after the snapshot compacts`);
  await rt.handle({ actorId: id, event: { type: 'NOOP' } }, sh, epoch);
  t.same(await rows(id), { snapshotSeq: COMPACT_EVERY + 1, deltas: [] }, 'a transition that changes nothing writes nothing');
  await rt.handle({ actorId: id, event: { type: 'NOTE', text: 'one more' } }, sh, epoch);
  await rt.handle({ actorId: id, event: { type: 'FORGET' } }, sh, epoch);
  t.same(await rows(id), { snapshotSeq: COMPACT_EVERY + 3, deltas: [] }, "the definition's compact() compacts at once");
  const [snap] = await sql<{ text: string }[]>`select snapshot::text as text from actor_snapshots where actor_id = ${id}`;
  t.notOk(snap!.text.includes('one more'), 'and what it forgot is in no row');
  rt.stopAll();
});

t.test('a crash between transitions loses nothing: a new runtime replays snapshot + deltas and goes on', async (t) => {
  const { shard: sh, epoch } = await shard();
  const id = 'roster:crash';
  const mirror = shadow();
  const events = [...script(COMPACT_EVERY + 20, 11)];
  let rt = runtime();
  for (const [i, e] of events.entries()) {
    if (i % 17 === 16) {
      rt.stopAll(); // the process is gone: nothing compacted, nothing flushed
      rt = runtime();
    }
    const reply = (await rt.handle({ actorId: id, event: e }, sh, epoch)) as { people?: number };
    mirror.send({ ...e, at: clock.now() });
    if (e.type === 'ADD' || e.type === 'NOOP') t.equal(reply.people, Object.keys(mirror.json().context.people).length, 'the reply counts everyone so far');
  }
  t.ok((await rows(id)).deltas.length > 0, 'ends with deltas pending');
  rt.stopAll();
  t.same(await stored(id), mirror.json());
});

t.test('a stale epoch cannot write a delta; the new owner numbers on', async (t) => {
  const { shard: sh, epoch } = await shard();
  const id = 'roster:fenced';
  const a = runtime();
  await a.handle({ actorId: id, event: { type: 'ADD', id: 'a', name: 'Ada' } }, sh, epoch);
  await a.handle({ actorId: id, event: { type: 'ADD', id: 'b', name: 'Bo' } }, sh, epoch);
  t.same(await rows(id), { snapshotSeq: 1, deltas: [2] });
  const newer = await acquireEpoch(sql, sh, 'test-node-b'); // another node takes the shard over
  const b = runtime();
  t.match(await b.handle({ actorId: id, event: { type: 'ADD', id: 'c', name: 'Cy' } }, sh, newer), { ok: true, people: 3 });
  await t.rejects(a.handle({ actorId: id, event: { type: 'ADD', id: 'd', name: 'Di' } }, sh, epoch), { name: 'FencedError' }, 'the former owner, with Ada and Bo in memory, is refused');
  t.same(await rows(id), { snapshotSeq: 1, deltas: [2, 3] }, 'no delta of the stale owner');
  await t.rejects(
    sql.begin(async (tx) => tx`insert into actor_deltas (actor_id, seq, shard, patch) values (${id}, 3, ${sh}, '[]')`),
    { code: '23505' },
    'and no second delta can ever take a number',
  );
  t.match(await b.handle({ actorId: id, event: { type: 'NOOP' } }, sh, newer), { people: 3 });
  t.same(Object.keys(((await stored(id)) as { context: { people: object } }).context.people), ['a', 'b', 'c']);
  a.stopAll();
  b.stopAll();
});

t.test('a new machine version rebuilds the actor from its row and drops the deltas of the old one', async (t) => {
  const { shard: sh, epoch } = await shard();
  const id = 'roster:versions';
  const v1 = runtime([rosterDef(1)]);
  for (const e of script(10, 3)) await v1.handle({ actorId: id, event: e }, sh, epoch);
  t.ok((await rows(id)).deltas.length > 0, 'version 1 left deltas');
  v1.stopAll();
  const v2 = runtime([rosterDef(2)]);
  t.match(await v2.handle({ actorId: id, event: { type: 'NOOP' } }, sh, epoch), { ok: true, people: 0 }, 'version 2 starts from its input');
  const [row] = await sql<{ machineVersion: number; seq: string }[]>`select machine_version, seq::text from actor_snapshots where actor_id = ${id}`;
  t.equal(row!.machineVersion, 2);
  t.same((await rows(id)).deltas, [], "version 1's deltas are gone with its snapshot");
  await v2.handle({ actorId: id, event: { type: 'ADD', id: 'z', name: 'Zed' } }, sh, epoch);
  t.same((await rows(id)).deltas, [Number(row!.seq) + 1], 'and version 2 numbers on');
  v2.stopAll();
});

t.test('passivation and hand-over compact first; a failed compaction leaves the deltas, which still load', async (t) => {
  const { shard: sh, epoch } = await shard();
  const rt = runtime();
  const mirror = shadow();
  for (const e of script(12, 5)) {
    await rt.handle({ actorId: 'roster:idle', event: e }, sh, epoch);
    mirror.send({ ...e, at: clock.now() });
  }
  await rt.handle({ actorId: 'roster:handed', event: { type: 'ADD', id: 'h', name: 'Hal' } }, sh, epoch);
  await rt.handle({ actorId: 'roster:handed', event: { type: 'HAND', id: 'h' } }, sh, epoch);
  t.ok((await rows('roster:idle')).deltas.length > 0);
  t.equal(rt.passivateIdle(0), 2, 'both idle actors passivated');
  t.equal(rt.size, 0, 'out of memory at once');
  // each message waits behind the compaction in its mailbox, then loads the compacted row
  await rt.handle({ actorId: 'roster:idle', event: { type: 'NOOP' } }, sh, epoch);
  await rt.handle({ actorId: 'roster:handed', event: { type: 'NOOP' } }, sh, epoch);
  t.same((await rows('roster:idle')).deltas, [], 'compacted before it was dropped');
  t.same((await rows('roster:handed')).deltas, []);
  t.same(await stored('roster:idle'), mirror.json());
  await rt.handle({ actorId: 'roster:handed', event: { type: 'HAND', id: 'h' } }, sh, epoch);
  t.equal((await rows('roster:handed')).deltas.length, 1);
  await rt.releaseShard(sh);
  t.equal(rt.size, 0, 'the shard handed over: nothing of it in memory');
  t.same((await rows('roster:handed')).deltas, [], 'compacted under its epoch before the hand-over');

  // a compaction refused (the epoch moved on meanwhile) drops the actor all the same; its deltas load
  await rt.handle({ actorId: 'roster:handed', event: { type: 'HAND', id: 'h' } }, sh, epoch);
  await rt.handle({ actorId: 'roster:handed', event: { type: 'HAND', id: 'h' } }, sh, epoch);
  const newer = await acquireEpoch(sql, sh, 'test-node-c');
  await rt.releaseShard(sh);
  t.same((await rows('roster:handed')).deltas.length, 2, 'the deltas stayed');
  const next = runtime();
  await next.handle({ actorId: 'roster:handed', event: { type: 'NOOP' } }, sh, newer);
  t.same(((await stored('roster:handed')) as { context: { people: Record<string, { hand: boolean }> } }).context.people.h, { name: 'Hal', hand: false });
  rt.stopAll();
  next.stopAll();
});

t.test('a missing delta is refused at load, never skipped', async (t) => {
  const { shard: sh, epoch } = await shard();
  const rt = runtime();
  for (const e of script(6, 9)) await rt.handle({ actorId: 'roster:gap', event: e }, sh, epoch);
  rt.stopAll();
  const { deltas } = await rows('roster:gap');
  t.ok(deltas.length >= 2);
  await sql`delete from actor_deltas where actor_id = 'roster:gap' and seq = ${deltas[0]!}`;
  await t.rejects(runtime().handle({ actorId: 'roster:gap', event: { type: 'NOOP' } }, sh, epoch), /a transition is missing/);
});

// ---- the meeting machine itself, filling up to a class: its deltas replay to what it holds
const meetingIn = meetingInput.parse({
  meetingId: 'mtg_deltas000000000000',
  orgId: org.id,
  externalMeetingId: 'ext-deltas',
  kind: 'CLASS',
  title: 'Deltas',
  type: 'CLASSROOM',
  slug: 'abc-defg-hjk',
  hostUserId: 'usr_teacher00000000000',
  classId: 'cls_deltas000000000000',
  externalClassId: 'ext-class',
  courseId: null,
  batchId: null,
  scheduledStart: new Date(clock.now()).toISOString(),
  scheduledEnd: new Date(clock.now() + 3_600_000).toISOString(),
  settings: { muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, recordAutomatically: false, waitingRoom: false },
  planMaxMinutes: 720,
  status: 'SCHEDULED',
  maxParticipants: null,
  planMaxParticipants: 1000,
});
const meetingDef = defineActor<MeetingContext, { type: string }, unknown>({
  name: 'meeting',
  version: 1,
  machine: meetingMachine,
  events: meetingEvent,
  input: async () => meetingIn,
  orgOf: (c) => c.meeting.orgId,
  init: (at) => ({ type: 'INIT', at }),
  compact: (event, before, after) => forgetsHistory(event as { type: string }, before, after),
});

t.test('the meeting machine: 120 joins, hands, an anonymous poll, questions, leaves and the end, replayed', async (t) => {
  const rt = runtime([meetingDef]);
  const { shard: sh, epoch } = await shard();
  const id = `meeting:${meetingIn.meetingId}`;
  const mirror = shadow(meetingMachine as never, meetingIn);
  const send = async (e: Record<string, unknown>) => {
    await rt.handle({ actorId: id, event: e }, sh, epoch);
    mirror.send(meetingEvent.parse({ ...e, at: clock.now() }));
  };
  mirror.send({ type: 'INIT', at: clock.now() });
  const pid = (i: number) => `par_${String(i).padStart(16, '0')}`;
  const voter = (i: number) => `voter-${String(i).padStart(16, '0')}`;
  await send({ type: 'JOIN', participantId: 'par_teacher', sessionId: 'ses_teacher', user: { id: meetingIn.hostUserId, externalId: 't-1', name: 'Tina Teacher', email: null, role: 'TEACHER' }, roomRole: 'HOST', device: 'web', connectionId: 'con_teacher' });
  for (let i = 0; i < 120; i++) {
    await send({ type: 'JOIN', participantId: pid(i), sessionId: `ses_${i}`, user: { id: `usr_${i}`, externalId: `s-${i}`, name: `Student ${i}`, email: null, role: 'STUDENT' }, roomRole: 'PARTICIPANT', device: 'web', connectionId: `con_${i}`, voter: voter(i) });
  }
  const afterJoins = await rows(id);
  t.ok(afterJoins.deltas.length > 0 && afterJoins.snapshotSeq > 1, `joins write deltas, compacted along the way (snapshot at ${afterJoins.snapshotSeq}, ${afterJoins.deltas.length} deltas)`);
  for (let i = 0; i < 120; i += 3) await send({ type: 'HAND', participantId: pid(i), by: pid(i), raise: true });
  await send({ type: 'OPEN_POLL', pollId: 'pol_anon', by: 'par_teacher', question: 'Which?', pollType: 'SINGLE_CHOICE', anonymous: true, options: ['a', 'b', 'c'], correct: [] });
  for (let i = 0; i < 30; i++) {
    await send({ type: 'ANSWER_POLL', pollId: 'pol_anon', participantId: pid(i), voter: voter(i), choices: [i % 3], text: null });
    t.same((await rows(id)).deltas, [], 'an answer to an anonymous poll leaves no delta behind (their order would be the order of arrival)');
  }
  for (let i = 0; i < 120; i += 10) await send({ type: 'ASK_QUESTION', questionId: `qst_${i}`, participantId: pid(i), voter: voter(i), text: `Question ${i}?`, anonymous: false });
  for (let i = 1; i < 40; i++) await send({ type: 'UPVOTE_QUESTION', questionId: 'qst_0', participantId: pid(i), voter: voter(i) });
  for (let i = 0; i < 120; i += 2) await send({ type: 'LEAVE', participantId: pid(i) });
  t.ok((await rows(id)).deltas.length > 0);
  t.same(await stored(id), mirror.json(), 'snapshot + deltas = the meeting in memory');
  await send({ type: 'END', by: 'par_teacher' });
  const ended = await rows(id);
  t.same(ended.deltas, [], 'the end compacts: no delta from before it is kept');
  const [snap] = await sql<{ text: string }[]>`select snapshot::text as text from actor_snapshots where actor_id = ${id}`;
  t.notOk(snap!.text.includes('Student 1'), 'and the ended snapshot names no student');
  t.same(await stored(id), mirror.json());
  rt.stopAll();
});
