import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { eventually } from '../helpers/ws.ts';
import { layerForTile } from '../../media/view.ts';

// A long walk through real pages in Chromium: its own budget, above the suite's 120 s per file,
// so that a busy machine slows it without failing it.
t.setTimeout(300_000);

// The room in Chromium with a fake camera and microphone: real pages, real WebRTC through the node's
// mediasoup worker. Page state is read from `window.aula` (the page's controller).

const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't1', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 's1', fullName: 'Sam Student', role: 'STUDENT' })).body.data;
const viewer = (await call('POST', '/public/users', { externalId: 'v1', fullName: 'Vic Viewer', role: 'STUDENT' })).body.data;
const browser = await launchBrowser(t, { media: true });

async function meeting(title: string, settings: Record<string, unknown> = {}) {
  return (await call('POST', '/public/meetings', { title, type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60, settings })).body.data;
}

async function link(meetingId: string, userId: string, role = 'PARTICIPANT', extra: Record<string, unknown> = {}) {
  return (await call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role, ...extra })).body.data;
}

async function open(b: Browser, url: string): Promise<Page> {
  const context = await b.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  // what the page warns about shows in the test's output (a failure on a busy machine is then explainable)
  page.on('console', (m) => {
    if (m.type() === 'warning' || m.type() === 'error') process.stderr.write(`[page ${m.type()}] ${m.text()}\n`);
  });
  await page.goto(url);
  return page;
}

const phase = (p: Page) => p.evaluate(() => (window as any).aula.state.phase as string);
const bytes = (p: Page): Promise<{ sent: number; received: number; audioEnergy: number }> =>
  p.evaluate(async () => ((window as any).aula.media ? await (window as any).aula.media.bytes() : { sent: 0, received: 0, audioEnergy: 0 }));
const remoteTracks = (p: Page) => p.evaluate(() => [...((window as any).aula.media?.remote.values() ?? [])].map((r: any) => `${r.source}:${r.kind}`).sort());

async function joinFromPrejoin(p: Page): Promise<void> {
  await p.waitForSelector('#join');
  await p.click('#join');
}

/** The teacher (HOST) and the student, each in their own browser context, both in the room. */
async function teacherAndStudent(meetingId: string): Promise<[Page, Page]> {
  const tp = await open(browser, (await link(meetingId, teacher.id, 'HOST')).url);
  await joinFromPrejoin(tp);
  await eventually(async () => (await phase(tp)) === 'room', 10_000);
  const sp = await open(browser, (await link(meetingId, student.id)).url);
  await joinFromPrejoin(sp);
  await eventually(async () => (await phase(sp)) === 'room', 10_000);
  return [tp, sp];
}

/** Bytes received grow over a second: media is flowing in. */
async function receiving(p: Page): Promise<boolean> {
  const a = (await bytes(p)).received;
  await new Promise((r) => setTimeout(r, 1000));
  return (await bytes(p)).received > a + 1000;
}

t.test('teacher and student see and hear each other; a viewer receives and sends nothing', async (t) => {
  const m = await meeting('Physics 9B');
  const tp = await open(browser, (await link(m.id, teacher.id, 'HOST')).url);
  await tp.waitForSelector('#join');
  t.equal(await tp.textContent('#display-name'), 'Tina Teacher', 'the pre-join shows the name');
  await eventually(() => tp.evaluate(() => (document.querySelector('.preview video') as HTMLVideoElement | null)?.videoWidth ?? 0), 10_000);
  await screenshot(tp, 'prejoin');
  await joinFromPrejoin(tp);
  await eventually(async () => (await phase(tp)) === 'room', 10_000);

  const sp = await open(browser, (await link(m.id, student.id)).url);
  await joinFromPrejoin(sp);
  await eventually(async () => (await phase(sp)) === 'room', 10_000);

  await eventually(async () => (await remoteTracks(tp)).join() === 'camera:video,mic:audio', 15_000);
  await eventually(async () => (await remoteTracks(sp)).join() === 'camera:video,mic:audio', 15_000);
  t.ok(await eventually(() => receiving(tp), 15_000), "the teacher's page receives RTP");
  t.ok(await eventually(() => receiving(sp), 15_000), "the student's page receives RTP");
  t.ok((await bytes(tp)).sent > 0 && (await bytes(sp)).sent > 0, 'both send');
  // what each decodes from the other's fake microphone (a beep) is sound, not silence
  await eventually(async () => (await bytes(tp)).audioEnergy > 0 && (await bytes(sp)).audioEnergy > 0, 15_000);
  t.pass('both hear audio that is not silence');
  // the student's video element plays the teacher's camera
  await eventually(() => sp.evaluate(() => [...document.querySelectorAll('video')].some((v) => v.videoWidth > 0 && !v.classList.contains('mirror'))), 15_000);
  t.equal(await tp.getAttribute('button[aria-label="Mute"]', 'aria-pressed'), 'true', 'the mic button says it is on');
  await screenshot(sp, 'room');

  // what the student's page shows decides what it receives: the teacher's tile, at the layer its size needs
  const participantOf = (p: Page) => p.evaluate(() => (window as any).aula.state.participantId as string);
  const [tid, sid] = [await participantOf(tp), await participantOf(sp)];
  const tile = await sp.evaluate((id) => {
    const r = document.querySelector(`[data-view-participant="${id}"][data-view-source="camera"]`)!.getBoundingClientRect();
    return { width: r.width, height: r.height };
  }, tid);
  const room = async () => (await node.app.media!.rooms.room(m.id))!.inspect();
  const cameraFor = async (receiver: string, from: string) => (await room()).peers.find((p) => p.participantId === receiver)?.received.find((c) => c.from === from && c.source === 'camera');
  const expected = layerForTile(tile);
  await eventually(async () => (await cameraFor(sid, tid))?.spatialLayer === expected, 5000);
  t.match(await cameraFor(sid, tid), { ready: true, paused: false, spatialLayer: expected }, `the student's ${Math.round(tile.width)}x${Math.round(tile.height)} tile of the teacher: layer ${expected}`);
  // dynacast in Chromium: nobody receives the teacher's top layer, so the teacher's browser stops encoding it
  const teacherCamera = (await room()).peers.find((p) => p.participantId === tid)!.producers.find((p) => p.source === 'camera')!;
  await eventually(async () => teacherCamera.producerId && (await room()).peers.find((p) => p.participantId === tid)!.producers.find((p) => p.source === 'camera')!.layersWanted === expected, 5000);
  const layers = () => tp.evaluate(() => (window as any).aula.media.sentByLayer('camera') as Promise<number[]>);
  await new Promise((r) => setTimeout(r, 1000));
  const a = await layers();
  await new Promise((r) => setTimeout(r, 2000));
  const b = await layers();
  t.equal(a.length, 3, 'the teacher sends three layers');
  t.ok(b[expected]! > a[expected]! + 1000, `the layer received is sent (${a} -> ${b})`);
  for (let i = expected + 1; i < 3; i++) t.ok(b[i]! - a[i]! < 1000, `layer ${i}, which nobody receives, is not (${a[i]} -> ${b[i]})`);

  const vp = await open(browser, (await link(m.id, viewer.id, 'VIEWER')).url);
  await joinFromPrejoin(vp);
  await eventually(async () => (await phase(vp)) === 'room', 10_000);
  await eventually(async () => (await remoteTracks(vp)).length === 4, 15_000);
  t.ok(await eventually(() => receiving(vp), 15_000), 'the viewer receives');
  t.equal((await bytes(vp)).sent, 0, 'the viewer sends nothing');
  t.ok((await vp.$('button[aria-label="Mute"], button[aria-label="Unmute"]')) === null, 'the viewer has no microphone button');

  // the host panel: roster with roles, mute a student
  await tp.click('button[aria-label^="People"]');
  await tp.waitForSelector('aside[aria-label="People"]');
  await screenshot(tp, 'host-panel');
  await tp.click('button[aria-label="Mute Sam Student"]');
  await sp.waitForSelector('#muted-banner');
  t.match(await sp.textContent('#muted-banner'), /A host muted your microphone/);
  await sp.click('#muted-banner button');
  await tp.waitForSelector('button[aria-label="Allow unmute for Sam Student"]');
  await tp.click('button[aria-label="Allow unmute for Sam Student"]');
  await eventually(() => sp.evaluate(() => (window as any).aula.state.unmuteAllowed), 5000);
  await sp.click('button[aria-label="Unmute"]');
  await eventually(() => sp.evaluate(() => (window as any).aula.state.micOn), 5000);
  t.pass('the student unmuted after the host allowed it');

  // a raised hand badges the host's People button, with every panel closed
  await tp.click('button[aria-label="Close the people panel"]');
  await sp.click('button[aria-label="Raise hand"]');
  await tp.waitForSelector('button[aria-label="People, 1 hand raised"] .count.hands');
  t.equal(await tp.getAttribute('button[aria-label="People, 1 hand raised"] .count', 'data-count'), '1', 'a raised hand shows on People');
  t.equal(await sp.$('button[aria-label^="People,"]'), null, 'students see no count of hands');
  await sp.click('button[aria-label="Lower hand"]');
  await tp.waitForSelector('button[aria-label="People"]');
  await tp.click('button[aria-label="People"]');
  await tp.waitForSelector('aside[aria-label="People"]');

  // "Mute all" asks first: dismissed, nobody is muted; confirmed, the student is
  const asked: string[] = [];
  tp.once('dialog', (d) => {
    asked.push(d.message());
    void d.dismiss();
  });
  await tp.click('button:has-text("Mute all")');
  await eventually(() => asked.length === 1, 5000);
  t.match(asked[0], /Mute everyone\?/, 'Mute all asks for confirmation');
  await new Promise((r) => setTimeout(r, 500));
  t.equal(await sp.$('#muted-banner'), null, 'dismissed: nobody was muted');
  tp.once('dialog', (d) => void d.accept());
  await tp.click('button:has-text("Mute all")');
  await sp.waitForSelector('#muted-banner');
  t.pass('confirmed: the student is muted');

  // the host locks the meeting: everyone sees it, a newcomer's page says so, unlocking lets them in
  t.equal(await tp.textContent('#lock'), 'Lock meeting');
  await tp.click('#lock');
  await sp.waitForSelector('#locked');
  await eventually(async () => (await tp.textContent('#lock')) === 'Unlock meeting', 5000);
  await screenshot(tp, 'locked');
  const late = (await call('POST', '/public/users', { externalId: 'late', fullName: 'Lee Late', role: 'STUDENT' })).body.data;
  const lp = await open(browser, (await link(m.id, late.id)).url);
  await lp.waitForSelector('text=This meeting is locked');
  await screenshot(lp, 'meeting-locked');
  await tp.click('#lock');
  await eventually(async () => (await sp.$('#locked')) === null, 5000);
  t.pass('locked and unlocked from the host panel; the newcomer was told why');
  for (const p of [tp, sp, vp, lp]) await p.context().close();
});

t.test('the waiting page moves into the room when the API admits, and ending sends the student to redirectUrl', async (t) => {
  const m = await meeting('Chemistry 10A', { waitingRoom: true });
  const tp = await open(browser, (await link(m.id, teacher.id, 'HOST')).url);
  await joinFromPrejoin(tp);
  await eventually(async () => (await phase(tp)) === 'room', 10_000);

  const sl = await link(m.id, student.id, 'PARTICIPANT', { redirectUrl: 'https://school.example/after-class' });
  const sp = await open(browser, sl.url);
  await sp.context().route('https://school.example/**', (r) => r.fulfill({ status: 200, contentType: 'text/html', body: '<title>Back at school</title>' }));
  await sp.waitForSelector('#join');
  t.equal(await sp.textContent('#join'), 'Ask to join');
  await sp.click('#join');
  await sp.waitForSelector('text=Waiting for a host to let you in');
  await sp.evaluate(() => ((window as any).notReloaded = true));
  await screenshot(sp, 'waiting');

  const queueId = await sp.evaluate(() => (window as any).aula.state.session.waitingRoom.queueId);
  const admitted = await call('POST', `/public/meetings/${m.id}/waiting-room/${queueId}/admit`);
  t.equal(admitted.status, 200);
  await eventually(async () => (await phase(sp)) === 'room', 10_000);
  t.equal(await sp.evaluate(() => (window as any).notReloaded), true, 'no reload');
  await eventually(async () => (await remoteTracks(sp)).length === 2, 15_000);
  t.ok(await eventually(() => receiving(sp), 15_000), 'the admitted student receives media');

  t.equal((await call('POST', `/public/meetings/${m.id}/end`)).status, 200);
  await sp.waitForSelector('text=This meeting has ended');
  await sp.waitForURL('https://school.example/after-class', { timeout: 10_000 });
  t.equal(await sp.title(), 'Back at school', 'the student is sent to redirectUrl');
  for (const p of [tp, sp]) await p.context().close();
});

t.test('a host admits from the waiting list in the page; a dropped connection reconnects by itself', async (t) => {
  const m = await meeting('History 8C', { waitingRoom: true });
  const tp = await open(browser, (await link(m.id, teacher.id, 'HOST')).url);
  await joinFromPrejoin(tp);
  await eventually(async () => (await phase(tp)) === 'room', 10_000);

  const sp = await open(browser, (await link(m.id, student.id)).url);
  await joinFromPrejoin(sp);
  await sp.waitForSelector('text=Waiting for a host to let you in');
  await tp.waitForSelector('button[aria-label="People, 1 waiting"]');
  await tp.click('button[aria-label^="People"]');
  await tp.click('button[aria-label="Admit Sam Student"]');
  await eventually(async () => (await phase(sp)) === 'room', 10_000);
  t.ok(await eventually(() => receiving(sp), 15_000), 'admitted from the page, the student receives media');

  // the server drops the student's socket as a restarting server would: the page says so and comes back
  const participantId = await sp.evaluate(() => (window as any).aula.state.participantId);
  for (const c of node.app.connections.ofParticipant(participantId)) c.end('server_shutdown');
  await sp.waitForSelector('#connection:has-text("Reconnecting")');
  t.pass('the page shows that it is reconnecting');
  await eventually(async () => (await phase(sp)) === 'room', 10_000);
  t.ok((await sp.$('#connection')) === null, 'back in the room');
  t.ok(await eventually(() => receiving(sp), 15_000), 'and media flows again');
  t.ok(await eventually(() => receiving(tp), 15_000), 'both ways');
  for (const p of [tp, sp]) await p.context().close();
});

t.test('a host runs the class from the keyboard: every control in the tab order, the menu and the panel open and close with keys', async (t) => {
  const m = await meeting('Geography 9B');
  const tp = await open(browser, (await link(m.id, teacher.id, 'HOST')).url);
  await joinFromPrejoin(tp);
  await eventually(async () => (await phase(tp)) === 'room', 10_000);
  const focused = () => tp.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent?.trim() ?? '');

  // joining leaves the focus on the first control; Tab goes on from there
  await eventually(async () => (await focused()) === 'Mute', 5000);
  const order: string[] = [await focused()];
  for (let i = 0; i < 20 && !order.includes('Leave'); i++) {
    await tp.keyboard.press('Tab');
    order.push(await focused());
  }
  for (const label of ['Mute', 'Stop video', 'Share screen', 'Raise hand', 'People', 'Chat', 'Polls', 'Q&A', 'Leave']) t.ok(order.includes(label), `${label} is reached with Tab`);

  await tp.keyboard.press('Enter');
  t.equal(await tp.getAttribute('button[aria-label="Leave"]', 'aria-expanded'), 'true', 'Enter opens the Leave menu');
  t.equal(await eventually(async () => (await focused()) === 'Leave the meeting' && 'Leave the meeting', 3000), 'Leave the meeting', 'on its first item');
  await tp.keyboard.press('ArrowDown');
  t.equal(await focused(), 'End for everyone');
  await tp.keyboard.press('ArrowDown');
  t.equal(await focused(), 'Leave the meeting', 'the arrows wrap around');
  await tp.keyboard.press('Escape');
  t.equal(await tp.$('#leave-menu'), null, 'Escape closes it');
  t.equal(await focused(), 'Leave', 'and gives the focus back to the button');

  await tp.click('button[aria-label="Leave"]');
  await tp.waitForSelector('#leave-menu');
  await tp.click('nav.controls button[title="People"]');
  await tp.waitForSelector('#leave-menu', { state: 'detached' });
  t.pass('a click elsewhere closes the menu');
  await tp.click('button[aria-label="Close the people panel"]');

  await tp.focus('nav.controls button[title="People"]');
  await tp.keyboard.press('Enter');
  await tp.waitForSelector('aside.panel');
  await tp.focus('button[aria-label="Close the people panel"]');
  await tp.keyboard.press('Escape');
  t.equal(await tp.$('aside.panel'), null, 'Escape closes the people panel');
  t.match(await focused(), /^People/, 'focus back on its button');

  // the shortcuts: H raises and lowers the hand, M the microphone, ? the help; none while typing
  await tp.keyboard.press('h');
  await eventually(() => tp.evaluate(() => !!(window as any).aula.state.roster.find((p: any) => p.participantId === (window as any).aula.state.participantId)?.handRaisedAt), 5000);
  await tp.keyboard.press('h');
  await eventually(() => tp.evaluate(() => !(window as any).aula.state.roster.find((p: any) => p.participantId === (window as any).aula.state.participantId)?.handRaisedAt), 5000);
  t.pass('H raises the hand, and lowers it');
  const micBefore = await tp.evaluate(() => (window as any).aula.state.micOn as boolean);
  await tp.keyboard.press('m');
  await eventually(async () => (await tp.evaluate(() => (window as any).aula.state.micOn)) === !micBefore, 5000);
  await tp.keyboard.press('m');
  await eventually(async () => (await tp.evaluate(() => (window as any).aula.state.micOn)) === micBefore, 5000);
  t.pass('M turns the microphone off and on');
  await tp.keyboard.press('?');
  await tp.waitForSelector('dialog#help[open]');
  t.match(await tp.textContent('dialog#help'), /Raise or lower your hand/);
  await screenshot(tp, 'shortcuts');
  await tp.keyboard.press('Escape');
  await tp.waitForSelector('dialog#help:not([open])', { state: 'attached' });
  t.pass('? shows the shortcuts; Escape closes them');
  await tp.click('nav.controls button[title="Q&A"]');
  await tp.waitForSelector('aside.panel textarea, aside.panel input[type="text"]');
  await tp.focus('aside.panel textarea, aside.panel input[type="text"]');
  await tp.keyboard.type('hm');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(await tp.evaluate(() => (window as any).aula.state.micOn), micBefore, 'typing an m in a question does not mute');
  await tp.click('nav.controls button[title="Q&A"]');

  await tp.focus('button[aria-label="Leave"]');
  await tp.keyboard.press('ArrowDown');
  await eventually(async () => (await focused()) === 'Leave the meeting', 3000);
  await tp.keyboard.press('ArrowDown');
  t.equal(await focused(), 'End for everyone');
  let question = '';
  tp.once('dialog', (d) => {
    question = d.message();
    void d.accept();
  });
  await tp.keyboard.press('Enter');
  await eventually(async () => (await call('GET', `/public/meetings/${m.id}`)).body.data.status === 'ENDED', 10_000);
  t.match(question, /End the meeting for everyone\?/, 'it asked first');
  t.pass('End for everyone, chosen with the keyboard, ends the meeting');
  await tp.context().close();
});

t.test('no layout shift: the controls stay put as people come and go, and a tile keeps its size with the camera on or off', async (t) => {
  const m = await meeting('Music 5A');
  const tp = await open(browser, (await link(m.id, teacher.id, 'HOST')).url);
  await joinFromPrejoin(tp);
  await eventually(async () => (await phase(tp)) === 'room', 10_000);
  const box = (selector: string) => tp.$eval(selector, (e) => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].map(Math.round); });
  const controls = await box('nav.controls');

  const sp = await open(browser, (await link(m.id, student.id)).url);
  await joinFromPrejoin(sp);
  await tp.waitForSelector('figure[aria-label="Sam Student"] video');
  const withCamera = await box('figure[aria-label="Sam Student"]');
  t.same(await box('nav.controls'), controls, 'a tile coming does not move the controls');
  await sp.click('button[aria-label="Stop video"]');
  await tp.waitForSelector('figure[aria-label="Sam Student"] .avatar');
  t.same(await box('figure[aria-label="Sam Student"]'), withCamera, 'the tile keeps its size when the camera goes off');
  await sp.context().close();
  await tp.waitForSelector('figure[aria-label="Sam Student"]', { state: 'detached', timeout: 30_000 });
  t.same(await box('nav.controls'), controls, 'nor does a tile going');
  await tp.context().close();
});

t.test('a quiz and Q&A in the page: the host opens a quiz, the student answers, the host closes and shares it; the student asks, the host answers', async (t) => {
  const m = await meeting('Biology 8B');
  const [tp, sp] = await teacherAndStudent(m.id);

  // the host drafts a single-choice quiz in the Polls panel
  await tp.click('button[title="Polls"]');
  await tp.waitForSelector('form[aria-label="New poll"]');
  await tp.fill('form[aria-label="New poll"] input[placeholder="Ask the class something"]', 'Which organelle makes ATP?');
  await tp.fill('input[aria-label="Option 1"]', 'Nucleus');
  await tp.fill('input[aria-label="Option 2"]', 'Mitochondrion');
  await tp.click('text=Add an option');
  await tp.fill('input[aria-label="Option 3"]', 'Ribosome');
  await tp.click('text=Quiz: grade the answers');
  await tp.click('input[aria-label="Option 2 is correct"]');
  await screenshot(tp, 'poll-draft');
  await tp.click('text=Open the poll');
  await tp.waitForSelector('li.poll.open');

  // the student is told (the poll pops up), answers from the panel
  await sp.waitForSelector('button[title="Polls"] .count');
  t.match(await sp.getAttribute('button[title="Polls"]', 'aria-label'), /waiting for your answer/);
  await sp.waitForSelector('aside[aria-label="Polls"]');
  await sp.click('label.choice:has-text("Mitochondrion")');
  await screenshot(sp, 'poll-answer');
  await sp.click('text=Send answer');
  await sp.waitForSelector('text=Answer sent.');
  t.equal(await sp.$('button[title="Polls"] .count'), null, 'answered: no badge');

  // the host sees it live, closes and shares; the student sees the right answer and the results
  await tp.waitForSelector('text=1 answer');
  await tp.click('text=Close and share results');
  await sp.waitForSelector('.bars li.correct:has-text("Mitochondrion")');
  t.match(await sp.textContent('.bars li.correct'), /correct.*your answer/);
  await tp.waitForSelector('text=Results shared with everyone.');
  await screenshot(tp, 'poll-results');
  const polls = await call('GET', `/public/meetings/${m.id}/polls`);
  t.match(polls.body.data.quizScores, [{ user: { externalId: 's1' }, answered: 1, correct: 1 }], 'the API has the score');

  // Q&A: the student asks anonymously, the host answers in text
  await sp.click('button[title="Q&A"]');
  await sp.fill('textarea[aria-label="Your question"]', 'Do plants have mitochondria too?');
  await sp.click('text=Ask anonymously');
  await sp.click('form.ask button[type="submit"]');
  await sp.waitForSelector('li.question:has-text("Anonymous (you)")');
  await tp.waitForSelector('button[title="Q&A"] .count');
  await tp.click('button[title="Q&A"]');
  await tp.waitForSelector('li.question:has-text("Do plants have mitochondria too?")');
  t.notOk(await tp.$('li.question:has-text("Sam Student")'), 'the host does not see who asked');
  await tp.click('li.question >> text=Answer');
  await tp.fill('li.question textarea[aria-label="Your answer"]', 'Yes: they respire too.');
  await tp.click('li.question >> text=Send answer');
  await sp.waitForSelector('.q-answer:has-text("Yes: they respire too.")');
  await screenshot(sp, 'qa-student');
  await screenshot(tp, 'qa-host');
  const questions = await call('GET', `/public/meetings/${m.id}/questions`);
  t.match(questions.body.data.questions, [{ text: 'Do plants have mitochondria too?', askedBy: null, status: 'ANSWERED', answer: 'Yes: they respire too.' }]);
  for (const p of [tp, sp]) await p.context().close();
});

t.test('on a 360-px wide phone every control is labelled and in reach: five and More in one row, the rest in its menu', async (t) => {
  const m = await meeting('Maths 7A');
  const context = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
  const p = await context.newPage();
  await p.goto((await link(m.id, teacher.id, 'HOST')).url);
  await joinFromPrejoin(p);
  await eventually(async () => (await phase(p)) === 'room', 10_000);
  const onScreen = (selector: string) => p.$$eval(selector, (bs) => bs.map((b) => ({ label: b.getAttribute('aria-label') ?? '', top: b.getBoundingClientRect().top, right: b.getBoundingClientRect().right, bottom: b.getBoundingClientRect().bottom })));
  const bar = await onScreen('nav.controls > button, nav.controls > span > button');
  t.same(bar.map((c) => c.label), ['Mute', 'Stop video', 'People', 'Chat', 'More', 'Leave'], "a host's five and More");
  for (const c of bar) t.ok(c.right <= 360 && c.bottom <= 740, `${c.label} is on screen`);
  t.equal(new Set(bar.map((c) => Math.round(c.bottom))).size, 1, 'in one row');
  t.equal(await p.evaluate(() => document.documentElement.scrollWidth), 360, 'no sideways scrolling');
  await screenshot(p, 'room-phone');

  await p.click('nav.controls button[aria-controls="more-menu"]');
  const menu = await onScreen('#more-menu [role^="menuitem"]');
  for (const c of menu) t.ok(c.right <= 360 && c.top >= 0, `${c.label}, in the menu, is on screen`);
  const reachable = [...bar, ...menu].map((c) => c.label);
  for (const label of ['Mute', 'Stop video', 'Share screen', 'Raise hand', 'People', 'Chat', 'Polls', 'Q&A', 'Leave']) t.ok(reachable.includes(label), `${label} is in reach`);
  await p.click('#more-menu [role^="menuitem"][aria-label="Polls"]');
  const panel = await p.$eval('aside[aria-label="Polls"]', (e) => e.getBoundingClientRect().toJSON());
  const controls = await p.$eval('nav.controls', (e) => e.getBoundingClientRect().toJSON());
  t.ok(panel.width === 360 && panel.bottom <= controls.top, 'the polls panel covers the stage, above the controls');
  await screenshot(p, 'polls-phone');
  await context.close();
});

t.test('a host shares the screen: students see the presentation layout; a student may not share unless allowed', async (t) => {
  const m = await meeting('Art 6D', { allowStudentScreenShare: false });
  const [tp, sp] = await teacherAndStudent(m.id);
  t.ok((await sp.$('button[aria-label="Share screen"]')) === null, 'no share button for a student while the setting is off');

  await tp.click('button[aria-label="Share screen"]');
  await eventually(() => tp.evaluate(() => (window as any).aula.state.screenOn), 10_000);
  await sp.waitForSelector('.stage.presenting figure.screen');
  t.match(await sp.getAttribute('.stage.presenting figure.screen', 'aria-label'), /Tina Teacher is presenting/);
  await eventually(() => sp.evaluate(() => ((document.querySelector('figure.screen video') as HTMLVideoElement | null)?.videoWidth ?? 0) > 0), 15_000);
  await screenshot(sp, 'presenting');
  t.match(await tp.textContent('#presenting'), /You are presenting/, 'the presenter is told, with a way to stop');
  t.equal(await sp.$('#presenting'), null, 'the students are not');
  await tp.click('button[aria-label="Stop presenting"]');
  await eventually(async () => (await sp.$('.stage.presenting')) === null, 10_000);
  t.pass('the layout goes back to the grid when sharing stops');

  t.equal((await call('PATCH', `/public/meetings/${m.id}`, { settings: { allowStudentScreenShare: true } })).status, 200);
  await sp.waitForSelector('button[aria-label="Share screen"]');
  t.pass('the setting, changed during the class, gives the student the button');
  for (const p of [tp, sp]) await p.context().close();
});
