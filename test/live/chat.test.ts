import t, { type Test } from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { connect, type RoomClient } from '../helpers/ws.ts';
import { assertError } from '../helpers/assert.ts';
import { actorRows } from '../helpers/actor-state.ts';

// The room's chat, reactions and the hosts' alerts through the real room socket: rows in Postgres, the
// settings on the meeting, what each person sees, what the API lists, and who may do what.
const T0 = Date.parse('2026-11-05T09:00:00Z');
const clock = new ManualClock(T0);
const node = await startTestNode(t, { clock });
const sql = node.app.sql;

async function school(settings: Record<string, unknown> = {}) {
  const { tenant, call, user, events } = await newSchool(node);
  const teacher = await user('t-1', 'Tina Teacher', 'TEACHER');
  const meeting = (await call('POST', '/public/meetings', { title: 'History', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60, settings })).body.data;
  const exchange = async (userId: string, role = 'PARTICIPANT') => {
    const link = (await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId, role })).body.data;
    return api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${userId}-${Math.random()}` } });
  };
  const enter = async (userId: string, role = 'PARTICIPANT'): Promise<{ ws: RoomClient; joined: any; history: any; session: any }> => {
    const r = await exchange(userId, role);
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    const ws = await connect(t, r.body.data.mediaUrl, r.body.data.mediaToken);
    const joined = await ws.type('joined');
    return { ws, joined, history: await ws.type('chat-history'), session: r.body.data };
  };
  return { tenant, call, user, teacher, meeting, enter, exchange, events };
}

const texts = (messages: any[]) => messages.map((m) => m.text);

t.test('to the room and privately with the hosts: who receives what, late joiners see the history, a student never writes to another privately', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  t.same(host.history.messages, [], 'an empty chat to begin with');
  const amy = await s.enter((await s.user('s-amy', 'Amy Adams')).id);
  const ben = await s.enter((await s.user('s-ben', 'Ben Bell')).id);
  const amyId = amy.joined.participantId;
  const benId = ben.joined.participantId;

  const sent = await amy.ws.command({ type: 'chat-send', text: '  Is the essay due Friday? <b>see https://school.example/essay</b>  ' });
  t.match(sent, { ok: true, message: { participantId: amyId, name: 'Amy Adams', roomRole: 'PARTICIPANT', text: 'Is the essay due Friday? <b>see https://school.example/essay</b>', privateWith: null } }, 'stored as text, trimmed; markup is the page\'s to show as text');
  t.match(sent.message.messageId, /^chm_/);
  for (const p of [host, ben, amy]) t.match((await p.ws.type('chat')).message, { messageId: sent.message.messageId }, 'everyone hears a message to the room');

  const toHosts = await ben.ws.command({ type: 'chat-send', text: 'I feel unwell, may I leave early?', privateTo: 'hosts' });
  t.match(toHosts, { ok: true, message: { participantId: benId, privateWith: { participantId: benId, name: 'Ben Bell' } } });
  t.match((await host.ws.type('chat')).message, { text: 'I feel unwell, may I leave early?' }, 'the hosts read a private message to them');
  t.match((await ben.ws.type('chat')).message, { text: 'I feel unwell, may I leave early?' }, 'and its sender');
  const reply = await host.ws.command({ type: 'chat-send', text: 'Yes, go to the office.', privateTo: benId });
  t.match(reply, { ok: true, message: { name: 'Tina Teacher', roomRole: 'HOST', privateWith: { participantId: benId, name: 'Ben Bell' } } });
  t.match((await ben.ws.type('chat')).message, { text: 'Yes, go to the office.' }, 'a host writes privately to one student');
  await host.ws.type('chat');
  t.equal(amy.ws.messages.filter((m) => m.type === 'chat').length, 0, 'another student hears none of it');

  assertErr(t, await amy.ws.command({ type: 'chat-send', text: 'psst', privateTo: benId }), 'chat_not_allowed', 'a student cannot write to another student privately');
  assertErr(t, await host.ws.command({ type: 'chat-send', text: 'x', privateTo: 'hosts' }), 'chat_not_allowed', 'a host writes to the room or to a student');
  assertErr(t, await host.ws.command({ type: 'chat-send', text: 'x', privateTo: 'par_nobody' }), 'not_found');
  assertErr(t, await amy.ws.command({ type: 'chat-send', text: '   ' }), 'validation_failed', 'an empty message');
  assertErr(t, await amy.ws.command({ type: 'chat-send', text: 'x'.repeat(1001) }), 'validation_failed', 'a message over 1,000 characters');

  const late = await s.enter((await s.user('s-cal', 'Cal Cole')).id);
  t.same(texts(late.history.messages), ['Is the essay due Friday? <b>see https://school.example/essay</b>'], 'a late joiner sees the room\'s messages, not others\' private ones');
  const benAgain = await s.enter((await s.user('s-ben')).id);
  t.same(texts(benAgain.history.messages), ['Is the essay due Friday? <b>see https://school.example/essay</b>', 'I feel unwell, may I leave early?', 'Yes, go to the office.'], 'a student who comes back sees their own conversation');
  const host2 = await s.enter(s.teacher.id, 'HOST');
  t.equal(host2.history.messages.length, 3, 'a host sees every conversation');

  const stored = await sql<{ text: string; privateWith: string | null }[]>`select text, private_with from chat_messages where meeting_id = ${s.meeting.id} order by sent_at, id`;
  t.equal(stored.length, 3, 'rows in chat_messages');
  const state = JSON.stringify((await actorRows(sql, `meeting:${s.meeting.id}`)).state);
  t.match(state, /Amy Adams/, 'the meeting actor\'s state is read');
  t.notMatch(state, /essay due Friday/, 'and the chat is not in it');
});

function assertErr(t: Test, ack: any, code: string, what?: string) {
  t.match(ack, { ok: false, error: { code } }, what ?? code);
}

t.test('hosts change the chat settings live; the meeting keeps them; students cannot', async (t) => {
  const s = await school({ chat: 'hosts-only', privateChatToHosts: false });
  t.match(s.meeting.settings, { chat: 'hosts-only', privateChatToHosts: false }, 'set when the meeting is made');
  assertError(t, await s.call('POST', '/public/meetings', { title: 'X', type: 'MEETING', hostUserId: s.teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 30, settings: { chat: 'sometimes' } }), 400, 'validation_failed');
  const host = await s.enter(s.teacher.id, 'HOST');
  const amy = await s.enter((await s.user('s-amy', 'Amy Adams')).id);
  t.match(amy.joined.settings, { chat: 'hosts-only', privateChatToHosts: false }, 'the room is told the settings');
  t.match(amy.session.meeting.settings, { chat: 'hosts-only', privateChatToHosts: false }, 'and so is the session');
  assertErr(t, await amy.ws.command({ type: 'chat-send', text: 'hello' }), 'chat_not_allowed', 'hosts-only: students read');
  assertErr(t, await amy.ws.command({ type: 'chat-send', text: 'hello', privateTo: 'hosts' }), 'chat_not_allowed', 'private messages to the hosts are off');
  t.match(await host.ws.command({ type: 'chat-send', text: 'Welcome' }), { ok: true });

  assertErr(t, await amy.ws.command({ type: 'chat-settings', chat: 'everyone' }), 'forbidden', 'a student cannot change them');
  assertErr(t, await host.ws.command({ type: 'chat-settings' }), 'validation_failed', 'a change names a setting');
  t.match(await host.ws.command({ type: 'chat-settings', chat: 'everyone', privateChatToHosts: true }), { ok: true, settings: { chat: 'everyone', privateChatToHosts: true } });
  t.match((await amy.ws.next((m) => m.type === 'settings' && m.settings.chat === 'everyone')).settings, { privateChatToHosts: true }, 'everyone hears the new settings');
  t.match(await amy.ws.command({ type: 'chat-send', text: 'Thanks!' }), { ok: true }, 'and the students write');
  t.match((await s.call('GET', `/public/meetings/${s.meeting.id}`)).body.data.settings, { chat: 'everyone', privateChatToHosts: true }, 'the meeting keeps them');
  t.ok((await s.events('meeting.updated')).some((e) => e.meetingId === s.meeting.id), 'meeting.updated is sent');

  t.match(await host.ws.command({ type: 'chat-settings', chat: 'off' }), { ok: true });
  await amy.ws.next((m) => m.type === 'settings' && m.settings.chat === 'off');
  assertErr(t, await host.ws.command({ type: 'chat-send', text: 'x' }), 'chat_not_allowed', 'off: nobody writes to the room');
  t.match(await amy.ws.command({ type: 'chat-send', text: 'Can I ask something?', privateTo: 'hosts' }), { ok: true }, 'a private line to the hosts is its own setting');
});

t.test('a host deletes a message: it leaves every chat and the API; the API lists the public chat with a cursor', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  const amy = await s.enter((await s.user('s-amy', 'Amy Adams')).id);
  const ids: string[] = [];
  for (const text of ['one', 'two', 'three']) {
    ids.push((await amy.ws.command({ type: 'chat-send', text })).message.messageId);
    clock.advance(1000);
  }
  await amy.ws.command({ type: 'chat-send', text: 'private', privateTo: 'hosts' });
  t.match(await host.ws.command({ type: 'chat-send', text: 'four' }), { ok: true });

  assertErr(t, await amy.ws.command({ type: 'chat-delete', messageId: ids[1] }), 'forbidden', 'a student cannot delete');
  t.match(await host.ws.command({ type: 'chat-delete', messageId: ids[1] }), { ok: true });
  t.match(await amy.ws.next((m) => m.type === 'chat-deleted'), { messageId: ids[1] }, 'everyone is told');
  assertErr(t, await host.ws.command({ type: 'chat-delete', messageId: ids[1] }), 'not_found', 'deleting again');
  const [row] = await sql<{ text: string | null; deletedBy: string }[]>`select text, deleted_by from chat_messages where id = ${ids[1]!}`;
  t.match(row, { text: null, deletedBy: s.teacher.id }, 'its text is gone, who deleted it is kept');

  const first = await s.call('GET', `/public/meetings/${s.meeting.id}/chat?limit=2`);
  t.equal(first.status, 200);
  t.match(first.body.data, [
    { messageId: ids[0], meetingId: s.meeting.id, text: 'one', sender: { externalId: 's-amy', name: 'Amy Adams', role: 'STUDENT', roomRole: 'PARTICIPANT' } },
    { messageId: ids[2], text: 'three' },
  ]);
  const second = await s.call('GET', `/public/meetings/${s.meeting.id}/chat?limit=2&cursor=${first.body.nextCursor}`);
  t.same(second.body.data.map((m: any) => m.text), ['four'], 'private and deleted messages are not listed');
  t.equal(second.body.nextCursor, null);
  assertError(t, await s.call('GET', `/public/meetings/${s.meeting.id}/chat?cursor=bogus`), 400, 'validation_failed');
  assertError(t, await s.call('GET', `/public/meetings/mtg_nope/chat`), 404, 'meeting_not_found');
  const other = await newSchool(node);
  assertError(t, await other.call('GET', `/public/meetings/${s.meeting.id}/chat`), 404, 'meeting_not_found', );
});

t.test('a person who deletes their account: their messages stay, with their name erased', async (t) => {
  const s = await school();
  await s.enter(s.teacher.id, 'HOST');
  const amy = await s.enter((await s.user('s-amy', 'Amy Adams')).id);
  await amy.ws.command({ type: 'chat-send', text: 'my answer is 42' });
  const gone = await api(node, 'DELETE', '/users/me', { bearer: amy.session.accessToken });
  t.equal(gone.status, 200, JSON.stringify(gone.body));
  const listed = (await s.call('GET', `/public/meetings/${s.meeting.id}/chat`)).body.data;
  t.match(listed, [{ text: 'my answer is 42', sender: { name: 'Deleted user' } }]);
  t.notMatch(JSON.stringify(listed), /Amy/);
  const late = await s.enter((await s.user('s-ben', 'Ben Bell')).id);
  t.match(late.history.messages, [{ text: 'my answer is 42', name: 'Deleted user' }], 'the room shows it erased too');
});

t.test('chat and reactions are rate limited per session; reactions reach everyone', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  const amy = await s.enter((await s.user('s-amy', 'Amy Adams')).id);
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push(await amy.ws.command({ type: 'chat-send', text: `line ${i}` }));
  t.equal(answers.filter((a) => a.ok).length, 5, 'five in a row');
  t.match(answers[5], { ok: false, error: { code: 'command_rate_limited', details: { limit: 'chat-send' } } });

  t.match(await amy.ws.command({ type: 'react', emoji: '👏' }), { ok: true });
  t.match(await host.ws.type('reaction'), { participantId: amy.joined.participantId, emoji: '👏' });
  assertErr(t, await amy.ws.command({ type: 'react', emoji: '<img src=x>' }), 'validation_failed', 'only the offered reactions');
  const more = [];
  for (let i = 0; i < 6; i++) more.push(await amy.ws.command({ type: 'react', emoji: '👍' }));
  t.match(more.at(-1), { ok: false, error: { code: 'command_rate_limited', details: { limit: 'react' } } });
});

t.test('hosts allow everyone to unmute at once', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  const amy = await s.enter((await s.user('s-amy', 'Amy Adams')).id);
  const ben = await s.enter((await s.user('s-ben', 'Ben Bell')).id);
  t.match(await host.ws.command({ type: 'mute-all' }), { ok: true });
  assertErr(t, await amy.ws.command({ type: 'allow-unmute-all' }), 'forbidden', 'a student cannot');
  const allowed = await host.ws.command({ type: 'allow-unmute-all' });
  t.same(allowed.allowed.sort(), [amy.joined.participantId, ben.joined.participantId].sort());
  for (const p of [amy, ben]) await p.ws.type('unmute-allowed');
  const roster = await host.ws.next((m) => m.type === 'roster' && m.participants.every((p: any) => !p.micLocked));
  t.ok(roster, 'nobody is locked any more');
  t.same((await host.ws.command({ type: 'allow-unmute-all' })).allowed, [], 'again: nobody to allow');
});

t.test('a refused join to a locked room: the hosts hear of it, at most once a minute per person', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  const dan = await s.user('s-dan', 'Dan Day');
  t.match(await host.ws.command({ type: 'lock', locked: true }), { ok: true, locked: true });
  assertError(t, await s.exchange(dan.id), 403, 'meeting_locked');
  t.match(await host.ws.type('knock'), { userId: dan.id, name: 'Dan Day' }, 'the hosts are told who knocked');
  assertError(t, await s.exchange(dan.id), 403, 'meeting_locked');
  await s.call('GET', `/public/meetings/${s.meeting.id}`); // a round trip for a second knock to have arrived, had it been sent
  await new Promise((r) => setTimeout(r, 200));
  t.equal(host.ws.messages.filter((m) => m.type === 'knock').length, 0, 'not again within the minute');
  clock.advance(61_000);
  assertError(t, await s.exchange(dan.id), 403, 'meeting_locked');
  t.match(await host.ws.type('knock'), { userId: dan.id }, 'again after a minute');
  t.match(await host.ws.command({ type: 'lock', locked: false }), { ok: true, locked: false });
  t.equal((await s.exchange(dan.id)).status, 200, 'unlocked: in');
});

t.test('hosts see who answered a named poll while it is open; an anonymous poll and the shared copy never say', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  const amyUser = await s.user('s-amy', 'Amy Adams');
  const amy = await s.enter(amyUser.id);
  await s.enter((await s.user('s-ben', 'Ben Bell')).id);
  const named = (await host.ws.command({ type: 'open-poll', question: 'Ready?', pollType: 'YES_NO' })).poll;
  t.same((await host.ws.next((m) => m.type === 'poll-results' && m.results.pollId === named.pollId)).results.answeredBy, [], 'nobody yet');
  await amy.ws.command({ type: 'answer-poll', pollId: named.pollId, choices: [0] });
  t.same((await host.ws.next((m) => m.type === 'poll-results' && m.results.answered === 1)).results.answeredBy, [amyUser.id], 'the hosts see who answered');
  await host.ws.command({ type: 'close-poll', pollId: named.pollId, share: true });
  const shared = await amy.ws.next((m) => m.type === 'poll-results' && m.results.pollId === named.pollId);
  t.notOk('answeredBy' in shared.results, 'the copy shared with everyone does not say who');

  const anon = (await host.ws.command({ type: 'open-poll', question: 'Honestly?', pollType: 'YES_NO', anonymous: true })).poll;
  await amy.ws.command({ type: 'answer-poll', pollId: anon.pollId, choices: [1] });
  const r = await host.ws.next((m) => m.type === 'poll-results' && m.results.pollId === anon.pollId && m.results.answered === 1);
  t.notOk('answeredBy' in r.results, 'an anonymous poll never says who answered');
});

t.test('a host who comes in while people wait sees them at once', async (t) => {
  const s = await school({ waitingRoom: true });
  const first = await s.enter(s.teacher.id, 'HOST'); // the room is live
  const amy = await s.user('s-amy', 'Amy Adams');
  const r = await s.exchange(amy.id);
  t.match(r.body.data.waitingRoom, { status: 'WAITING' });
  await first.ws.next((m) => m.type === 'waiting-room' && m.entries.length === 1);
  const cohost = await s.user('t-2', 'Carl Cohost', 'TEACHER');
  const late = await s.enter(cohost.id, 'COHOST');
  const list = await late.ws.next((m) => m.type === 'waiting-room');
  t.match(list.entries, [{ queueId: r.body.data.waitingRoom.queueId, name: 'Amy Adams' }], 'the list comes with the join, not only with the next change');
});
