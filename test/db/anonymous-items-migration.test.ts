import postgres from 'postgres';
import t from 'tap';
import { listMigrations } from '../../src/platform/db/migrate.ts';
import { pgOptions, type Sql } from '../../src/platform/db/index.ts';
import { createTestDatabase } from '../helpers/node.ts';

// Migration 0016 on what earlier releases stored: anonymous polls' responses lose their order of arrival
// and their times (rows and poll.closed events), ended meetings' snapshots lose their polls and questions,
// running meetings' snapshots lose the asker of an anonymous question and the voters, times and order of
// an open anonymous poll. Named polls and questions keep what they had. Running it again changes nothing.
const url = await createTestDatabase(t);
const sql = postgres(url, { ...pgOptions, max: 1 }) as unknown as Sql;
t.teardown(() => sql.end({ timeout: 1 }));
const migrations = listMigrations();
const m0016 = migrations.find((m) => m.version === 16)!;
for (const m of migrations.filter((m) => m.version < 16)) await sql.unsafe(m.sql);
// rows of this test only: the organizations, meetings and users they would point to are not needed
await sql`set session_replication_role = replica`;

const T = Date.parse('2026-10-01T09:00:00Z');
const at = (min: number) => new Date(T + min * 60_000).toISOString();
const amy = { id: 'usr_amy', externalId: 's-amy', name: 'Amy Adams', role: 'STUDENT' };
const ben = { id: 'usr_ben', externalId: 's-ben', name: 'Ben Bell', role: 'STUDENT' };

async function poll(id: string, anonymous: boolean, responses: [number[], string | null, string | null][]) {
  await sql`insert into polls (id, org_id, meeting_id, question, type, anonymous, options, correct, status, shared, votes, answered, created_at, closed_at)
    values (${id}, 'org_1', 'mtg_1', 'Q', 'MULTIPLE_CHOICE', ${anonymous}, ${sql.json(['A', 'B', 'C'])}, '[]', 'CLOSED', false, '[0,0,0]', ${responses.length}, ${at(0)}, ${at(10)})`;
  for (const [seq, [choices, text, userId]] of responses.entries()) {
    await sql`insert into poll_responses (poll_id, seq, user_id, choices, text, correct, responded_at) values (${id}, ${seq}, ${userId}, ${sql.json(choices)}, ${text}, null, ${at(seq + 1)})`;
  }
}
await poll('pol_anon', true, [[[2], null, null], [[0, 1], null, null], [[0], null, null]]);
await poll('pol_text', true, [[[], 'photosynthesis', null], [[], 'osmosis', null], [[], 'Osmosis', null]]);
await poll('pol_named', false, [[[2], null, 'usr_amy'], [[0], null, 'usr_ben']]);

const closed = (pollId: string, anonymous: boolean, responses: unknown[]) => ({ pollId, anonymous, closedAt: at(10), responses });
await sql`insert into outbox (id, org_id, type, data, created_at) values
  ('evt_1', 'org_1', 'poll.closed', ${sql.json(closed('pol_anon', true, [
    { user: null, choices: [2], text: null, respondedAt: at(1) },
    { user: null, choices: [0, 1], text: null, respondedAt: at(2) },
    { user: null, choices: [0], text: null, respondedAt: at(3) },
  ]) as never)}, ${at(10)}),
  ('evt_2', 'org_1', 'poll.closed', ${sql.json(closed('pol_named', false, [
    { user: amy, choices: [2], text: null, respondedAt: at(1) },
    { user: ben, choices: [0], text: null, respondedAt: at(2) },
  ]) as never)}, ${at(10)})`;

const question = (questionId: string, anonymous: boolean, user: typeof amy) => ({ questionId, text: 'Why?', anonymous, askedBy: { participantId: `par_${user.id}`, user }, askedAt: T, upvoters: ['usr_ben'], upvotes: 1, status: 'OPEN' });
const openAnonymous = {
  pollId: 'pol_open',
  anonymous: true,
  status: 'OPEN',
  texts: [],
  answers: [
    { voter: 'usr_ben', user: null, choices: [2], text: null, at: T + 60_000 },
    { voter: 'usr_amy', user: null, choices: [1], text: null, at: T + 120_000 },
  ],
};
const openNamed = { pollId: 'pol_open_named', anonymous: false, status: 'OPEN', texts: [], answers: [{ voter: 'usr_amy', user: amy, choices: [0], text: null, at: T + 60_000 }] };
const snapshot = (status: string, context: Record<string, unknown>) => ({ status: 'active', value: status.toLowerCase(), context: { status, participants: {}, ...context } });
await sql`insert into actor_snapshots (actor_id, kind, shard, machine_version, snapshot, updated_at) values
  ('meeting:mtg_ended', 'meeting', 1, 2, ${sql.json(snapshot('ENDED', { polls: [{ ...openNamed, status: 'CLOSED', answers: [] }], questions: [question('qst_1', false, amy), question('qst_2', true, ben)] }))}, ${at(0)}),
  ('meeting:mtg_live', 'meeting', 1, 2, ${sql.json(snapshot('LIVE', { polls: [openNamed, openAnonymous], questions: [question('qst_3', false, amy), question('qst_4', true, ben)] }))}, ${at(0)}),
  ('meeting:mtg_plain', 'meeting', 1, 2, ${sql.json(snapshot('LIVE', {}))}, ${at(0)}),
  ('webhook:whe_1', 'webhook', 1, 1, ${sql.json({ context: { status: 'ENDED', polls: ['kept'] } })}, ${at(0)})`;

const everything = async () => ({
  responses: await sql`select poll_id, seq, user_id, choices, text, responded_at from poll_responses order by poll_id, seq`,
  events: await sql`select id, data from outbox order by id`,
  snapshots: await sql`select actor_id, snapshot from actor_snapshots order by actor_id`,
});
const before = await everything();
await sql.unsafe(m0016.sql);
const after = await everything();

t.test('anonymous polls\' responses: by content, each at the poll\'s close; named ones as they were', async (t) => {
  const rows = (pollId: string) => after.responses.filter((r) => r.pollId === pollId).map((r) => [r.seq, r.choices, r.text, r.userId, r.respondedAt.toISOString()]);
  t.same(rows('pol_anon'), [[0, [0], null, null, at(10)], [1, [0, 1], null, null, at(10)], [2, [2], null, null, at(10)]]);
  t.same(rows('pol_text'), [[0, [], 'Osmosis', null, at(10)], [1, [], 'osmosis', null, at(10)], [2, [], 'photosynthesis', null, at(10)]]);
  t.same(rows('pol_named'), [[0, [2], null, 'usr_amy', at(1)], [1, [0], null, 'usr_ben', at(2)]]);
});

t.test('poll.closed of an anonymous poll: the same; of a named one: untouched', async (t) => {
  const [anon, named] = after.events.map((e) => e.data);
  t.same(anon.responses.map((r: any) => [r.choices, r.respondedAt]), [[[0], at(10)], [[0, 1], at(10)], [[2], at(10)]]);
  t.same(named, before.events[1]!.data);
});

t.test('snapshots: an ended meeting keeps no polls or questions, a running one no anonymous asker or voter', async (t) => {
  const of = (id: string) => after.snapshots.find((s) => s.actorId === id)!.snapshot;
  const ended = of('meeting:mtg_ended');
  t.notOk('polls' in ended.context || 'questions' in ended.context);
  t.same(ended.context.status, 'ENDED');

  const live = of('meeting:mtg_live').context;
  t.same(live.questions.map((q: any) => [q.questionId, q.askedBy?.user.name ?? null]), [['qst_3', 'Amy Adams'], ['qst_4', null]], 'the named asker stays');
  t.same(live.polls[0], openNamed, 'a named poll keeps its answers');
  const answers = live.polls[1].answers;
  t.same(answers.map((a: any) => [a.choices, a.user, a.at]), [[[1], null, null], [[2], null, null]], 'an anonymous poll\'s: by content, no time');
  t.notOk(JSON.stringify(live.polls[1]).match(/usr_/), 'and no voter that is a user id');
  t.same(of('meeting:mtg_plain'), before.snapshots.find((s) => s.actorId === 'meeting:mtg_plain')!.snapshot, 'a snapshot with neither is as it was');
  t.same(of('webhook:whe_1'), { context: { status: 'ENDED', polls: ['kept'] } }, 'other actors\' snapshots are not touched');
});

t.test('running it again changes nothing', async (t) => {
  await sql.unsafe(m0016.sql);
  t.same(await everything(), after);
});
