import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { eventually } from '../helpers/ws.ts';

// The room for a keyboard, a screen reader and a phone, in Chromium: axe-core on each page a person
// goes through (pre-join, waiting, the room with each panel open, as host and as student, and on a
// phone), where the focus goes, and the phone's layout. One meeting with a waiting room: the teacher,
// a student on a laptop, and a student on a phone.

const ANDROID_UA = 'Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36';

const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, fullName: string, role: string) => (await call('POST', '/public/users', { externalId, fullName, role })).body.data;
const teacher = await user('t1', 'Tina Teacher', 'TEACHER');
const student = await user('s1', 'Sam Student', 'STUDENT');
const phoneUser = await user('s2', 'Pia Phone', 'STUDENT');
const TITLE = 'Year 9 Biology: cells, tissues and organs, revision before the test';
const m = (await call('POST', '/public/meetings', { title: TITLE, type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60, settings: { waitingRoom: true } })).body.data;
const link = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${m.id}/join-links`, { userId, role })).body.data.url as string;
const browser = await launchBrowser(t, { media: true });

async function open(url: string, phone = false): Promise<Page> {
  const context = await browser.newContext(phone ? { viewport: { width: 360, height: 740 }, userAgent: ANDROID_UA, isMobile: true, hasTouch: true } : { viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'warning' || msg.type() === 'error') process.stderr.write(`[page ${msg.type()}] ${msg.text()}\n`);
  });
  await page.goto(url);
  return page;
}

const phase = (p: Page) => p.evaluate(() => (window as any).aula.state.phase as string);
const inRoom = (p: Page) => eventually(async () => (await phase(p)) === 'room', 15_000);
/** What has the focus: its accessible name, its text, or its tag. */
const focused = (p: Page) => p.evaluate(() => document.activeElement?.getAttribute('aria-label') ?? (document.activeElement?.textContent?.trim() || document.activeElement?.tagName) ?? '');
const focusIn = (p: Page, selector: string) => p.evaluate((s) => !!document.activeElement?.closest(s), selector);

async function clean(t: Test, p: Page, what: string): Promise<void> {
  const found = await axeViolations(p);
  t.same(found, [], `axe: no serious or critical violation on ${what}`, { violations: found });
}

let tp: Page; // the teacher, on a laptop
let sp: Page; // the student, on a laptop

t.test('keyboard only, and axe on the pre-join page: Tab to Join, the focus in the room, M and H', async (t) => {
  tp = await open(await link(teacher.id, 'HOST'));
  await tp.waitForSelector('#join');
  await eventually(() => tp.evaluate(() => (document.querySelector('.preview video') as HTMLVideoElement | null)?.videoWidth ?? 0), 10_000);
  await tp.waitForSelector('#network-check');
  await clean(t, tp, 'the pre-join page');

  // from the top of the pre-join page, Tab reaches Join past the devices and the toggles
  await tp.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  const order: string[] = [];
  for (let i = 0; i < 15 && order.at(-1) !== 'Join now'; i++) {
    await tp.keyboard.press('Tab');
    order.push(await focused(tp));
  }
  t.equal(order.at(-1), 'Join now', `Tab reaches Join (${order.join(' > ')})`);
  await tp.keyboard.press('Enter');
  await inRoom(tp);
  t.equal(await eventually(async () => (await focused(tp)) === 'Mute' && 'Mute', 5000), 'Mute', 'in the room the focus is on the first control');

  await tp.keyboard.press('m');
  await eventually(() => tp.evaluate(() => !(window as any).aula.state.micOn), 5000);
  t.equal(await tp.getAttribute('nav.controls button[title="Unmute"]', 'aria-pressed'), 'false', 'M mutes, and the button says so');
  await tp.keyboard.press('h');
  await tp.waitForSelector('nav.controls button[aria-label="Lower hand"]');
  t.pass('H raises the hand');
  await tp.keyboard.press('h');
  await tp.waitForSelector('nav.controls button[aria-label="Raise hand"]');
  await tp.keyboard.press('m');
  await eventually(() => tp.evaluate(() => (window as any).aula.state.micOn), 5000);
});

t.test('axe on the waiting page; the host admits from the keyboard: People, its heading, Admit, Escape', async (t) => {
  sp = await open(await link(student.id));
  await sp.waitForSelector('#join');
  await sp.click('#join');
  await sp.waitForSelector('text=Waiting for a host to let you in');
  await clean(t, sp, 'the waiting page');

  // People says someone waits; Tab to it, Enter opens it on its heading, Tab goes on to Admit
  await tp.waitForSelector('nav.controls button[aria-label="People, 1 waiting"]');
  for (let i = 0; i < 10 && !(await focused(tp)).startsWith('People'); i++) await tp.keyboard.press('Tab');
  await tp.keyboard.press('Enter');
  await tp.waitForSelector('aside[aria-label="People"]');
  t.ok(await focusIn(tp, 'aside[aria-label="People"] h2'), "the focus moves to the panel's heading");
  for (let i = 0; i < 5 && (await focused(tp)) !== 'Admit Sam Student'; i++) await tp.keyboard.press('Tab');
  t.equal(await focused(tp), 'Admit Sam Student', 'Tab goes on into the panel');
  await tp.keyboard.press('Enter');
  await inRoom(sp);
  t.pass('Enter admits the student');
  t.equal(await eventually(async () => (await focused(sp)) === 'Mute' && 'Mute', 5000), 'Mute', "the admitted student's focus is on the first control too");

  await tp.keyboard.press('Escape');
  await tp.waitForSelector('aside.panel', { state: 'detached' });
  t.match(await focused(tp), /^People/, 'Escape closes the panel and the focus goes back to its button');
});

t.test('the room with each panel open, as host and as student: no serious or critical violation; the focus moves into each panel and back', async (t) => {
  // what a class looks like: a hand up, a microphone off, a quiz open, a question asked (the student's
  // microphone is sending first: muted before, it would show on to the others)
  const sam = await sp.evaluate(() => (window as any).aula.state.participantId as string);
  await tp.waitForFunction((id) => (window as any).aula.state.sources[id]?.mic === 'on', sam, { timeout: 15_000 });
  await sp.keyboard.press('h');
  await sp.keyboard.press('m');
  await tp.waitForSelector('nav.controls button[aria-label*="1 hand raised"]');
  await tp.waitForSelector('figure[aria-label="Sam Student"] .badge[aria-label="Microphone off"]');
  t.ok(await tp.evaluate(() => (window as any).aula.openPoll({ question: 'Which organelle makes most of the ATP?', pollType: 'SINGLE_CHOICE', anonymous: false, options: ['Nucleus', 'Mitochondrion', 'Ribosome'], correct: [1] })));
  await sp.waitForSelector('nav.controls button[aria-label="Polls, a poll is waiting for your answer"]');

  // the poll pops up for the student, who answers it from the keyboard alone
  await sp.waitForSelector('aside[aria-label="Polls"] form.answer');
  t.ok(await focusIn(sp, 'aside[aria-label="Polls"] h2'), 'the poll pops up with the focus on its heading');
  for (let i = 0; i < 8 && (await sp.evaluate(() => (document.activeElement as HTMLInputElement | null)?.type)) !== 'radio'; i++) await sp.keyboard.press('Tab');
  await sp.keyboard.press('ArrowDown'); // the first option to the second: Mitochondrion
  for (let i = 0; i < 5 && (await focused(sp)) !== 'Send answer'; i++) await sp.keyboard.press('Tab');
  await sp.keyboard.press('Enter');
  await eventually(() => sp.evaluate(() => Object.keys((window as any).aula.state.answers).length === 1), 5000);
  t.same(await sp.evaluate(() => Object.values((window as any).aula.state.answers)[0]), { choices: [1], text: null }, 'answered Mitochondrion with the keyboard');
  await sp.keyboard.press('Escape');
  await sp.waitForSelector('aside.panel', { state: 'detached' });

  // the student asks: the focus goes back to the field, and a status says the question went
  await sp.click('nav.controls button[title="Q&A"]');
  await sp.fill('textarea[aria-label="Your question"]', 'Do plants have mitochondria too?');
  await sp.click('form.ask button[type="submit"]');
  await sp.waitForSelector('li.question:has-text("Do plants have mitochondria too?")');
  t.equal(await sp.textContent('#question-status'), 'Your question was sent.', 'the status says it was sent');
  t.ok(await focusIn(sp, 'textarea[aria-label="Your question"]'), 'the focus is back in the field');
  await sp.click('nav.controls button[title="Q&A"]');
  await tp.waitForSelector('nav.controls button[aria-label="Q&A, 1 open"]');

  for (const [who, p] of [['the host', tp], ['the student', sp]] as const) {
    await clean(t, p, `${who}'s room`);
    for (const [control, label] of [['People', 'People'], ['Polls', 'Polls'], ['Q&A', 'Questions'], ['Chat', 'Chat']]) {
      await p.click(`nav.controls button[title="${control}"]`);
      const panel = `aside[aria-label="${label}"]`;
      await p.waitForSelector(panel);
      t.ok(await focusIn(p, `${panel} h2`), `${who}: opening ${control} moves the focus to its heading`);
      await clean(t, p, `${who}'s room with ${control} open`);
      if (control === 'People') {
        await p.click(`${panel} button.icon-btn`);
        await p.waitForSelector(panel, { state: 'detached' });
        t.equal(await focused(p), await p.getAttribute(`nav.controls button[title="${control}"]`, 'aria-label'), `${who}: the close button gives the focus back to ${control}`);
      } else {
        await p.keyboard.press('Escape');
        await p.waitForSelector(panel, { state: 'detached' });
        t.equal(await focused(p), await p.getAttribute(`nav.controls button[title="${control}"]`, 'aria-label'), `${who}: Escape gives the focus back to ${control}`);
      }
    }
  }
});

t.test('on a phone (360x740, Android): three people fill the stage, the title and count fit, five controls and More, whose menu works with keys', async (t) => {
  const pp = await open(await link(phoneUser.id), true);
  await pp.waitForSelector('#join');
  await clean(t, pp, 'the pre-join page on a phone');
  await pp.click('#join');
  await pp.waitForSelector('text=Waiting for a host to let you in');
  const queueId = await pp.evaluate(() => (window as any).aula.state.session.waitingRoom.queueId);
  t.equal((await call('POST', `/public/meetings/${m.id}/waiting-room/${queueId}/admit`)).status, 200);
  await inRoom(pp);
  await pp.waitForFunction(() => document.querySelectorAll('.stage figure.tile').length === 3 && document.querySelectorAll('.stage figure.tile video').length === 3, undefined, { timeout: 20_000 });

  // the stage: the three tiles cover at least half of it
  const boxes = await pp.evaluate(() =>
    Object.fromEntries(['.stage', '.stage figure.tile', '.topbar', '#title', '#count', '.topbar .view-switch', 'nav.controls'].map((q) => [q, [...document.querySelectorAll(q)].map((e) => e.getBoundingClientRect().toJSON() as DOMRect)])),
  );
  const stage = boxes['.stage']![0]!;
  const tiles = boxes['.stage figure.tile']!;
  const fill = tiles.reduce((a, r) => a + r.width * r.height, 0) / (stage.width * stage.height);
  t.ok(fill >= 0.5, `the tiles fill ${(fill * 100).toFixed(0)}% of the ${Math.round(stage.width)}x${Math.round(stage.height)} stage`);
  t.ok(tiles.every((r) => r.left >= stage.left && r.right <= stage.right && r.top >= stage.top && r.bottom <= stage.bottom), 'all inside it');

  // the top bar: the title (cut with an ellipsis) and the count, neither under the buttons nor off the screen
  const [title, count, views] = [boxes['#title']![0]!, boxes['#count']![0]!, boxes['.topbar .view-switch']![0]!];
  t.ok(title.left >= 0 && title.right <= views.left && count.right <= views.left && count.width > 0, 'the title and the count are on screen, beside the view buttons');
  t.ok(title.width >= 150, `the title keeps most of the width (${Math.round(title.width)} px)`);
  t.same(await pp.$eval('#title', (e) => [getComputedStyle(e).textOverflow, e.scrollWidth > e.clientWidth]), ['ellipsis', true], 'the long title ends in an ellipsis');
  t.match(await pp.textContent('#count'), /^3 people$/);
  t.equal(await pp.evaluate(() => document.documentElement.scrollWidth), 360, 'no sideways scrolling');
  await screenshot(pp, 'phone-stage');

  // the bar: at most five controls and More, in one row, on screen
  const bar = await pp.$$eval('nav.controls > button, nav.controls > span > button', (bs) => bs.map((b) => ({ label: b.getAttribute('aria-label') ?? '', top: Math.round(b.getBoundingClientRect().top), right: b.getBoundingClientRect().right })));
  t.same(bar.map((b) => b.label.replace(/^More, .*/, 'More')), ['Mute', 'Stop video', 'Raise hand', 'Chat', 'More', 'Leave'], 'mic, camera, hand, chat, More, Leave');
  t.equal(bar[4]!.label, 'More, Polls: a poll is waiting for your answer, Q&A: 1 open', 'More says what waits in it');
  t.ok(bar.every((b) => b.right <= 360 && b.top === bar[0]!.top), 'in one row, on screen');

  // More: Enter opens it on its first item, the arrows move and wrap, Escape closes it and gives the focus back
  await pp.focus('nav.controls button[aria-controls="more-menu"]');
  await pp.keyboard.press('Enter');
  await pp.waitForSelector('#more-menu');
  const items = await pp.$$eval('#more-menu [role^="menuitem"]', (es) => es.map((e) => e.getAttribute('aria-label')));
  t.same(items, ['Share screen', 'People', 'Polls, a poll is waiting for your answer', 'Q&A, 1 open', 'React', 'Live captions'], 'the rest are in the menu');
  t.equal(await focused(pp), 'Share screen', 'on its first item');
  await pp.keyboard.press('ArrowUp');
  t.equal(await focused(pp), 'Live captions', 'the arrows wrap around');
  await pp.keyboard.press('Home');
  await pp.keyboard.press('ArrowDown');
  t.equal(await focused(pp), 'People');
  await clean(t, pp, 'the phone\'s room with the More menu open');
  await screenshot(pp, 'phone-more-menu');
  await pp.keyboard.press('Escape');
  await pp.waitForSelector('#more-menu', { state: 'detached' });
  t.match(await focused(pp), /^More/, 'Escape closes it, the focus back on More');

  // a panel from the menu: it covers the stage, takes the focus, and gives it back to More
  await pp.keyboard.press('ArrowDown');
  await pp.waitForSelector('#more-menu');
  await eventually(async () => (await focused(pp)) === 'Share screen');
  await pp.keyboard.press('ArrowDown');
  await eventually(async () => (await focused(pp)) === 'People');
  await pp.keyboard.press('ArrowDown');
  await eventually(async () => /^Polls/.test((await focused(pp)) ?? ''));
  await pp.keyboard.press('Enter');
  await pp.waitForSelector('aside[aria-label="Polls"]');
  t.ok(await focusIn(pp, 'aside[aria-label="Polls"] h2'), 'Polls, chosen in the menu, opens with the focus on its heading');
  await clean(t, pp, 'the phone\'s room with Polls open');
  await pp.keyboard.press('Escape');
  await pp.waitForSelector('aside.panel', { state: 'detached' });
  t.match(await focused(pp), /^More/, 'closing it gives the focus back to More');
  for (const p of [tp, sp, pp]) await p.context().close();
});
