import t from 'tap';
import type { Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { eventually } from '../helpers/ws.ts';

// The room's chat, reactions, the hosts' alerts and the poll pop-up in Chromium: a teacher and a student
// in their own browser contexts, every panel closed where the issue says so. Page state is read from
// `window.aula` (the page's controller); what a person sees is read from the page.

const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't1', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 's1', fullName: 'Sam Student', role: 'STUDENT' })).body.data;
const late = (await call('POST', '/public/users', { externalId: 's2', fullName: 'Lee Late', role: 'STUDENT' })).body.data;
const browser = await launchBrowser(t, { media: true });

const m = (await call('POST', '/public/meetings', { title: 'Geography 7C', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 })).body.data;
const link = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${m.id}/join-links`, { userId, role })).body.data;

async function enter(url: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  page.on('console', (msg) => {
    if (msg.type() === 'error') process.stderr.write(`[page error] ${msg.text()}\n`);
  });
  await page.goto(url);
  await page.waitForSelector('#join');
  await page.click('#join');
  await eventually(() => page.evaluate(() => (window as any).aula.state.phase === 'room'), 15_000);
  return page;
}

const tp = await enter((await link(teacher.id, 'HOST')).url);
const sp = await enter((await link(student.id)).url);
/** Lee, let in from the waiting room by an alert's Admit, stays in the class. */
let lp: Page;
const state = (p: Page, key: string) => p.evaluate((k) => (window as any).aula.state[k], key);

t.test('chat both ways: the unread badge, links as links and markup as text, a private line to the hosts, focus back to the message box', async (t) => {
  t.equal(await tp.locator('nav.controls button[title="Chat"]').count(), 1, 'a Chat button');
  await sp.click('nav.controls button[title="Chat"]');
  await sp.waitForSelector('#chat-input');
  await sp.fill('#chat-input', 'Map is at https://maps.example.org/7c <b>not bold</b>');
  await sp.keyboard.press('Enter');
  await eventually(async () => (await sp.textContent('#chat-status')) === 'Sent to everyone.');
  t.equal(await sp.evaluate(() => document.activeElement?.id), 'chat-input', 'the focus stays in the message box for the next line');

  await eventually(async () => (await tp.getAttribute('nav.controls button[title="Chat"]', 'aria-label'))?.includes('1 unread'), 5000);
  t.pass('the teacher, with every panel closed, sees the unread badge');
  await tp.click('nav.controls button[title="Chat"]');
  const msg = tp.locator('.chat .msg').first();
  t.match(await msg.textContent(), /Sam Student.*Map is at https:\/\/maps\.example\.org\/7c <b>not bold<\/b>/s, 'the markup shows as text');
  t.equal(await msg.locator('.msg-text b').count(), 0, 'and is not markup');
  t.equal(await msg.locator('a').getAttribute('href'), 'https://maps.example.org/7c', 'the address is a link');
  t.equal(await msg.locator('a').getAttribute('rel'), 'noopener noreferrer nofollow');
  await eventually(async () => (await state(tp, 'chatUnread')) === 0);

  // the teacher writes to Sam privately
  await tp.selectOption('.composer select', { label: 'Sam Student (privately)' });
  await tp.fill('#chat-input', 'Sam, please stay after class.');
  await tp.click('.composer button[type=submit]');
  await eventually(async () => (await sp.locator('.chat .msg.private').count()) === 1, 5000);
  t.match(await sp.locator('.chat .msg.private').textContent(), /Private, with the hosts.*stay after class/s, 'Sam sees it as private');
  await screenshot(tp, 'chat-teacher');

  // the teacher makes the chat hosts-only: Sam can only write to the hosts
  await tp.click('.chat-settings summary');
  await tp.selectOption('.chat-settings select', 'hosts-only');
  await eventually(async () => (await state(sp, 'settings')).chat === 'hosts-only', 5000);
  t.equal(await sp.locator('.composer select').count(), 0, 'no choice left for Sam');
  t.equal(await sp.getAttribute('#chat-input', 'aria-label'), 'Private message', 'only a private message to the hosts');
  await sp.fill('#chat-input', 'OK!');
  await sp.keyboard.press('Enter');
  await eventually(async () => (await tp.locator('.chat .msg.private').count()) === 2, 5000);
  await screenshot(sp, 'chat-student');
  await tp.selectOption('.chat-settings select', 'everyone');
  await tp.click('nav.controls button[title="Chat"]');
  await sp.click('nav.controls button[title="Chat"]');
});

t.test('alerts with every panel closed: a hand, a question, a knock at the waiting room and at the locked door, each with its action', async (t) => {
  t.equal(await tp.locator('aside.panel').count(), 0, 'the teacher has no panel open');
  const before = Date.now();
  await sp.evaluate(() => (window as any).aula.raiseHand(true));
  await tp.waitForSelector('.alert[data-alert=hand]', { timeout: 5000 });
  t.ok(Date.now() - before < 3000, `the hand shows in ${Date.now() - before} ms`);
  t.match(await tp.textContent('.alert[data-alert=hand]'), /Sam Student raised their hand/);
  t.equal(await tp.getAttribute('#alerts', 'aria-live'), 'polite', 'screen readers hear alerts without being cut off');

  await sp.evaluate(() => (window as any).aula.askQuestion('Which river is the longest?', false));
  await tp.waitForSelector('.alert[data-alert=question]', { timeout: 5000 });
  t.match(await tp.textContent('.alert[data-alert=question]'), /Sam Student asked: “Which river is the longest\?”/);
  // its action now: newer alerts (a slow waiting page knocking again) may push it out of the four shown
  await tp.click('.alert[data-alert=question] >> text=Open Q&A');
  await tp.waitForSelector('aside.panel[aria-label="Questions"]');
  t.pass('Open Q&A opens it');
  await tp.keyboard.press('Escape');
  await tp.waitForSelector('aside.panel', { state: 'detached' });

  // a knock at the waiting room: the teacher turns it on, Lee arrives
  await call('PATCH', `/public/meetings/${m.id}`, { settings: { waitingRoom: true } });
  lp = await (await browser.newContext()).newPage();
  await lp.goto((await link(late.id)).url);
  await lp.waitForSelector('#join');
  await lp.click('#join');
  await tp.waitForSelector('.alert[data-alert=waiting]', { timeout: 5000 });
  t.match(await tp.textContent('.alert[data-alert=waiting]'), /Lee Late is waiting to join/);
  await screenshot(tp, 'alerts');

  await tp.click('.alert[data-alert=hand] >> text=Lower hand');
  await eventually(async () => !(await sp.evaluate(() => (window as any).aula.state.roster.find((p: any) => p.participantId === (window as any).aula.state.participantId).handRaisedAt)), 5000);
  t.pass('Lower hand lowers it');
  await tp.click('.alert[data-alert=waiting] >> text=Admit');
  await eventually(() => lp.evaluate(() => (window as any).aula.state.phase === 'room'), 15_000);
  t.pass('Admit lets Lee in');

  await tp.evaluate(() => (window as any).aula.command({ type: 'lock', locked: true }));
  const knock = await api(node, 'POST', '/join-tokens/exchange', { body: { token: (await link((await call('POST', '/public/users', { externalId: 's3', fullName: 'Kim Knock', role: 'STUDENT' })).body.data.id)).token, deviceId: 'kim' } });
  t.equal(knock.body.error?.code, 'meeting_locked');
  await tp.waitForSelector('.alert[data-alert=knock]', { timeout: 5000 });
  t.match(await tp.textContent('.alert[data-alert=knock]'), /Kim Knock tried to join, but the meeting is locked/);
  await screenshot(tp, 'alert-locked-door');
  await tp.click('.alert[data-alert=knock] >> text=Unlock');
  await eventually(async () => (await state(tp, 'roomLocked')) === false, 5000);
  t.pass('Unlock unlocks');
  t.equal(await sp.locator('#alerts').count(), 0, 'students get no alerts');
});

t.test('a poll pops up for the student; the host sees who has not answered; the quiz says Correct', async (t) => {
  await tp.evaluate(() => (window as any).aula.openPoll({ question: 'Capital of Peru?', pollType: 'SINGLE_CHOICE', anonymous: false, options: ['Lima', 'Quito'], correct: [0] }));
  await sp.waitForSelector('aside.panel[aria-label="Polls"] form.answer', { timeout: 5000 });
  t.pass('the poll popped up on the student\'s page');
  await tp.click('nav.controls button[title="Polls"]');
  await eventually(async () => /0 of 2 answered\. Not yet: Sam Student, Lee Late/.test((await tp.textContent('.answered-count')) ?? ''), 5000);
  await screenshot(sp, 'poll-popup');
  await sp.check('form.answer input[type=radio] >> nth=0');
  await sp.click('form.answer button[type=submit]');
  await eventually(async () => /1 of 2 answered\. Not yet: Lee Late$/.test((await tp.textContent('.answered-count')) ?? ''), 5000);
  await tp.click('text=Close and share results');
  await sp.waitForSelector('.verdict.right', { timeout: 5000 });
  t.equal(await sp.textContent('.verdict'), '✓ Correct');
});

t.test('reactions float over the sender\'s tile; hosts allow everyone to unmute', async (t) => {
  await sp.click('nav.controls button[title="React"]');
  await sp.click('button[aria-label="React 👏"]');
  await tp.waitForSelector('.reaction', { timeout: 5000 });
  t.equal(await tp.textContent('.reaction'), '👏');
  await new Promise((r) => setTimeout(r, 600)); // past its fade-in, for the picture
  await screenshot(tp, 'reaction');
  const tile = await tp.locator(`[data-view-participant="${await state(sp, 'participantId')}"]`).first().boundingBox();
  const r = await tp.locator('.reaction').first().boundingBox();
  t.ok(tile && r && r.x >= tile.x && r.x <= tile.x + tile.width, 'over the sender\'s tile');
  await eventually(async () => (await tp.locator('.reaction').count()) === 0, 8000);
  t.pass('and gone after a few seconds');

  await tp.click('nav.controls button[title="People"]');
  await tp.click('text=Mute all');
  const micLocked = () => sp.evaluate(() => (window as any).aula.state.roster.find((p: any) => p.participantId === (window as any).aula.state.participantId)?.micLocked === true);
  await eventually(micLocked, 10_000);
  await tp.click('#allow-unmute-all');
  await eventually(async () => (await state(sp, 'unmuteAllowed')) === true && !(await micLocked()), 10_000);
  t.pass('the student may unmute again');
});

t.test('recording: a host records from the bar; everyone sees REC, a pause, the stop; the SDK hears it', async (t) => {
  t.equal(await sp.locator('nav.controls button[title="Record"]').count(), 0, 'students have no Record control');
  await tp.click('nav.controls button[title="Record"]');
  await sp.waitForSelector('#recording', { timeout: 5000 });
  t.match(await sp.textContent('#recording'), /REC/);
  t.equal(await sp.getAttribute('#recording [role=img]', 'aria-label'), 'This class is being recorded');
  await eventually(async () => (await state(sp, 'notice')) === 'This class is being recorded.', 5000);
  await tp.click('#pause-recording');
  await eventually(async () => (await sp.textContent('#recording'))?.includes('Paused'), 5000);
  await screenshot(tp, 'recording');
  t.equal(await sp.locator('#pause-recording').count(), 0, 'only hosts pause');
  await tp.click('#pause-recording');
  await tp.click('nav.controls button[title="Stop recording"]');
  await sp.waitForSelector('#recording', { state: 'detached', timeout: 5000 });
  t.equal(await state(sp, 'notice'), 'The recording stopped.');
  const recs = (await call('GET', `/public/meetings/${m.id}/recordings`)).body.data;
  t.match(recs, [{ status: 'RECORDING', phase: 'PROCESSING', automatic: false }], 'the recording is being composed');
});
