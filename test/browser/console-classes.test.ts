import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { connect, eventually, type RoomClient } from '../helpers/ws.ts';

// Real pages in Chromium: their own budget, above the suite's 120 s per file.
t.setTimeout(300_000);

// The console's classes (docs/console.md, "Classes") in Chromium against a real node: a class's three
// sessions held in real rooms (the node's clock driven through them: on time, late, a short visit, a
// no-show, a student enrolled after the first session), two of them settled FINAL and the last one
// still PROVISIONAL; an owner lists the classes (paged, found by external id), opens the class and reads
// each student against each session, narrows it to some days, downloads the CSV, and goes from a
// session's meeting back to its class. axe-core on every page, at 1280 and 360 px and in dark
// (AULA_SCREENSHOTS=docs/screenshots writes console-classes-*.png).

const MIN = 60_000;
const DAY = 24 * 60 * MIN;
const PASSWORD = 'correct horse battery staple';
const EMAIL = 'head@riverside.example';

// three weekly sessions, the last one ending two minutes before "now" (so it is not final yet)
const NOW = Date.now();
const T3 = NOW - 52 * MIN;
const T2 = T3 - 7 * DAY;
const T1 = T2 - 7 * DAY;
const clock = new ManualClock(T1 - 2 * 60 * MIN);

const node = await startTestNode(t, { clock, redis: false, overrides: { AULA_MEDIA_WORKERS: 0 } });
const tenant = await createTenant(node);
await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email: EMAIL, role: 'owner', password: PASSWORD });
await node.app.sql`update organizations set name = 'Riverside Secondary School' where id = ${tenant.orgId}`;
const call = async (method: string, path: string, body?: unknown) => {
  const r = await api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.body.data;
};
const user = (externalId: string, fullName: string, role = 'STUDENT') => call('POST', '/public/users', { externalId, fullName, role });

const teacher = await user('t-park', 'Helen Park', 'TEACHER');
const [amara, ben, chloe, diego, eli] = [
  await user('s-1001', 'Amara Okafor'),
  await user('s-1002', 'Ben Carter'),
  await user('s-1003', 'Chloé Martin'),
  await user('s-1004', 'Diego Ramos'),
  await user('s-1005', 'Eli Novak'),
];
await call('POST', '/public/classes', { externalId: 'phys-11', name: 'Year 11 Physics', section: '11C', academicYear: '2026–27' });
await call('POST', '/public/classes', { externalId: 'chem-10', name: 'Year 10 Chemistry', section: '10B', academicYear: '2026–27', courseId: 'CHEM-10' });
const biology = await call('POST', '/public/classes', { externalId: 'bio-9a', name: 'Year 9 Biology', section: '9A', academicYear: '2026–27', courseId: 'BIO-9', description: 'Cells, tissues and organ systems; lab work on Wednesdays.' });
const enroll = (u: { id: string }) => call('POST', `/public/classes/${biology.id}/enrollments`, { userId: u.id });
for (const u of [amara, ben, chloe, diego]) await enroll(u);

async function enter(meetingId: string, userId: string, role = 'PARTICIPANT'): Promise<RoomClient> {
  const link = await call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role });
  const r = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${userId}-${meetingId}` } });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  const c = await connect(t, r.body.data.mediaUrl, r.body.data.mediaToken);
  await c.type('joined');
  return c;
}
async function leave(c: RoomClient): Promise<void> {
  c.ws.send(JSON.stringify({ type: 'leave' }));
  await c.waitClosed();
}

/** A session of the class: who comes when (minutes after the start) and who leaves early; 50 minutes, ended by the host. */
async function session(week: number, start: number, plan: { user: { id: string }; at: number; leaveAt?: number }[]): Promise<string> {
  clock.set(start - 30 * MIN);
  const m = await call('POST', '/public/meetings', { externalId: `bio-9a-w${week}`, title: `Biology, week ${week}`, type: 'CLASS', classId: biology.id, hostUserId: teacher.id, scheduledStart: new Date(start).toISOString(), durationMinutes: 50 });
  clock.set(start);
  const host = await enter(m.id, teacher.id, 'HOST');
  const steps = plan.flatMap((p) => [{ at: p.at, p, join: true }, ...(p.leaveAt !== undefined ? [{ at: p.leaveAt, p, join: false }] : [])]).sort((a, b) => a.at - b.at);
  const inRoom = new Map<{ id: string }, RoomClient>();
  for (const s of steps) {
    clock.set(start + s.at * MIN);
    if (s.join) inRoom.set(s.p.user, await enter(m.id, s.p.user.id));
    else await leave(inRoom.get(s.p.user)!);
  }
  clock.set(start + 50 * MIN);
  host.ws.send(JSON.stringify({ type: 'end' }));
  await host.waitClosed();
  return m.id;
}

// week 1: Ben comes for nine minutes (absent), Diego never comes; Eli is not enrolled yet
const week1 = await session(1, T1, [{ user: amara, at: 0 }, { user: ben, at: 1, leaveAt: 10 }, { user: chloe, at: 0 }]);
clock.set(T1 + 56 * MIN);
await node.app.timers.tick();
await eventually(async () => (await call('GET', `/public/meetings/${week1}/attendance`)).status === 'FINAL', 10_000);
clock.set(T2 - 60 * MIN);
await enroll(eli);
// week 2: Ben fifteen minutes late, everyone else on time
const week2 = await session(2, T2, [{ user: amara, at: 0 }, { user: ben, at: 15 }, { user: chloe, at: 0 }, { user: diego, at: 2 }, { user: eli, at: 0 }]);
clock.set(T2 + 56 * MIN);
await node.app.timers.tick();
await eventually(async () => (await call('GET', `/public/meetings/${week2}/attendance`)).status === 'FINAL', 10_000);
// week 3, just ended: Chloé is away
await session(3, T3, [{ user: amara, at: 0 }, { user: ben, at: 0 }, { user: diego, at: 0 }, { user: eli, at: 3 }]);
clock.set(NOW);

const browser = await launchBrowser(t);
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true, timezoneId: 'UTC' });
const page = await context.newPage();
page.on('console', (msg) => msg.type() === 'error' && process.stderr.write(`[page error] ${msg.text()}\n`));
page.on('pageerror', (err) => process.stderr.write(`[page exception] ${err.message}\n`));

/** axe finds nothing serious; the page at 1280 px and at 360 px (scrolled to `at`), fitting without sideways scrolling. */
async function look(t: Test, p: Page, name: string, at?: string): Promise<void> {
  await p.waitForSelector('.state.loading', { state: 'detached' });
  t.same(await axeViolations(p), [], `axe: no serious or critical violation on ${name}`);
  await screenshot(p, `console-${name}-1280`);
  await p.setViewportSize({ width: 360, height: 740 });
  // below the sticky top bar
  if (at) await p.locator(at).evaluate((e) => window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 70));
  const wide = await p.evaluate(() => document.documentElement.scrollWidth);
  t.ok(wide <= 360, `${name} fits 360 px without scrolling sideways (${wide})`);
  t.same(await axeViolations(p), [], `axe: no serious or critical violation on ${name} at 360 px`);
  await screenshot(p, `console-${name}-360`);
  await p.setViewportSize({ width: 1280, height: 800 });
}

const MATRIX = 'table:has(caption:text("Attendance by person and session"))';
/** The marks of a person's row, one per session, as the page writes them. */
const marks = async (name: string) => page.locator(`${MATRIX} tbody tr:has(th:has-text("${name}")) td.session`).allTextContents();
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

t.test('Classes: in the navigation, newest first, each linked to its page', async (t) => {
  await page.goto(`${node.url}/console/classes`);
  await page.waitForSelector('h1:text-is("Sign in")');
  await page.fill('input[name=orgId]', tenant.orgId);
  await page.fill('input[name=email]', EMAIL);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForSelector('h1:text-is("Classes")');
  t.equal(await page.getAttribute('nav#nav a:text-is("Classes")', 'aria-current'), 'page', 'Classes is in the navigation, the current page');
  await page.waitForSelector('table:has(caption:text("Classes"))');
  t.same(await page.locator('table:has(caption:text("Classes")) tbody tr a').allTextContents(), ['Year 9 Biology', 'Year 10 Chemistry', 'Year 11 Physics'], 'newest first');
  t.match(await page.textContent('table:has(caption:text("Classes")) tbody tr:has-text("Year 10 Chemistry")'), /chem-10[\s\S]*10B[\s\S]*2026–27[\s\S]*CHEM-10/, 'its external id, section, year and course');
  await look(t, page, 'classes');
});

t.test("a class: each student against each session, a session's meeting and back, the CSV", async (t) => {
  await page.click('table:has(caption:text("Classes")) a:text-is("Year 9 Biology")');
  await page.waitForSelector('h1:text-is("Year 9 Biology")');
  t.equal(await page.evaluate(() => document.activeElement?.id), 'page-title', "the new page's heading has the focus");
  t.match(page.url(), new RegExp(`/console/classes/${biology.id}$`));
  t.match(await page.textContent('.facts'), /9A[\s\S]*2026–27[\s\S]*BIO-9[\s\S]*bio-9a/, 'section, year, course and ids');
  t.match(await page.textContent('.class-description'), 'lab work on Wednesdays');
  await page.waitForSelector(MATRIX);

  t.same(await page.locator(`${MATRIX} tbody th`).evaluateAll((ths) => ths.map((th) => th.firstChild?.textContent)), ['Amara Okafor', 'Ben Carter', 'Chloé Martin', 'Diego Ramos', 'Eli Novak', 'Helen Park'], 'the students by name, then the teacher');
  t.equal(await page.locator(`${MATRIX} thead th a`).count(), 3, 'a column a session, each linked to its meeting');
  t.match(await page.textContent(`${MATRIX} thead th:nth-child(4)`), /Biology, week 3[\s\S]*provisional/, 'the session not yet final says so');
  const ben3 = await marks('Ben Carter');
  t.match(ben3[0], /^absent9 min/, 'week 1: nine minutes of fifty, absent');
  t.match(ben3[1], /^late35 min/, 'week 2: fifteen minutes late');
  t.match(ben3[2], /^present50 min/, 'week 3: there from the start');
  t.match((await marks('Diego Ramos'))[0], /^absent$/, 'a no-show: absent, no time');
  t.match((await marks('Eli Novak'))[0], /^—not expected$/, 'not enrolled yet at week 1: a dash, "not expected" for screen readers');
  t.same(await page.locator(`${MATRIX} tbody tr:has(th:has-text("Ben Carter")) td.num`).allTextContents(), ['1', '1', '1'], 'his present, late and absent counts');
  t.same(await page.locator(`${MATRIX} tfoot td.session`).allTextContents(), ['2 of 4', '5 of 5', '4 of 5'], 'students present or late, per session');
  t.match(await page.textContent('.stats'), /3\s*Sessions[\s\S]*5\s*Students[\s\S]*79%\s*Present or late[\s\S]*of 14 student sessions, 1 late/, 'the totals');
  await page.setViewportSize({ width: 1280, height: 1240 }); // the picture holds the whole table
  await look(t, page, 'classes-class', '#att-h');
  await page.emulateMedia({ colorScheme: 'dark' });
  t.same(await axeViolations(page), [], 'axe: the class page, dark');
  await screenshot(page, 'console-classes-class-dark-1280');
  await page.emulateMedia({ colorScheme: 'light' });

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.section-head button:text("Download CSV")')]);
  t.equal(download.suggestedFilename(), 'attendance-bio-9a.csv');
  const csv = readFileSync((await download.path())!, 'utf8').trimEnd().split(/\r?\n/);
  t.match(csv[0], /^meetingId,externalMeetingId,attendanceSessionId,reportStatus,userId,externalUserId,name,role,status/, 'the CSV header');
  t.equal(csv.length, 1 + 5 + 6 + 6, 'a row per person per session: 5, 6 and 6');
  t.ok(csv.some((l) => l.includes('"bio-9a-w2"') && l.includes('"Ben Carter"') && l.includes('"LATE"')), "Ben's late week 2");

  await page.click(`${MATRIX} thead a >> nth=1`);
  await page.waitForSelector('h1:text-is("Biology, week 2")');
  await page.click('.facts a:text-is("Year 9 Biology")');
  await page.waitForSelector('h1:text-is("Year 9 Biology")');
  t.pass("the session's meeting page links back to its class by name");
});

t.test('a class narrowed to some days (in the URL), an empty range, a class with no sessions, one that does not exist', async (t) => {
  await page.waitForSelector(MATRIX);
  await page.fill('input[name=from]', day(T2));
  await page.waitForFunction(() => document.querySelectorAll('table:has(caption) thead th a').length === 2);
  t.match(page.url(), new RegExp(`\\?from=${day(T2)}$`), 'the first day in the address');
  await page.fill('input[name=to]', day(T2));
  await page.waitForFunction(() => document.querySelectorAll('table:has(caption) thead th a').length === 1);
  t.match(await page.textContent(`${MATRIX} thead`), /Biology, week 2/, 'from and to, both days included');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.section-head button:text("Download CSV")')]);
  t.equal(readFileSync((await download.path())!, 'utf8').trimEnd().split(/\r?\n/).length, 1 + 6, 'the CSV of those days only');
  await page.fill('input[name=to]', day(NOW + 2 * DAY));
  await page.fill('input[name=from]', day(NOW + DAY));
  await page.waitForSelector('text=No session of this class began in these days.');
  await page.click('a:text("Clear filters")');
  await page.waitForSelector(MATRIX);
  t.match(page.url(), new RegExp(`/console/classes/${biology.id}$`), 'cleared');

  await page.goto(`${node.url}/console/classes/phys-11`);
  await page.waitForSelector('h1:text-is("Year 11 Physics")');
  await page.waitForSelector('text=No session of this class has been held yet.');
  t.pass('a class is found by its external id too');
  await look(t, page, 'classes-no-sessions');

  await page.goto(`${node.url}/console/classes/cls_nothing_here`);
  await page.waitForSelector('.error-note');
  t.match(await page.textContent('.error-note'), /class_not_found/, "the API's error, with its code");
  t.same(await axeViolations(page), [], 'axe: the error');
});

t.test('Classes: paged by cursor in the address, found by external id', async (t) => {
  for (let i = 1; i <= 24; i++) await call('POST', '/public/classes', { externalId: `hr-${100 + i}`, name: `Homeroom ${100 + i}` });
  await page.goto(`${node.url}/console/classes`);
  await page.waitForSelector('a:text("Next page →")');
  t.equal(await page.locator('table:has(caption:text("Classes")) tbody tr').count(), 25, 'the first page');
  await page.click('a:text("Next page →")');
  await page.waitForSelector('text=Year 11 Physics');
  t.match(page.url(), /\/console\/classes\?cursor=/, 'the cursor is in the address');
  t.equal(await page.locator('table:has(caption:text("Classes")) tbody tr').count(), 2, 'the second page');
  await page.click('a:text("← First page")');
  await page.waitForSelector('text=Homeroom 124');
  await page.fill('input[name=externalId]', 'chem-10');
  await page.click('form[role=search] button');
  await page.waitForSelector('text=Homeroom 124', { state: 'detached' });
  await page.waitForSelector('.state.loading', { state: 'detached' });
  t.match(page.url(), /\?externalId=chem-10$/);
  t.same(await page.locator('table:has(caption:text("Classes")) tbody tr a').allTextContents(), ['Year 10 Chemistry']);
  await page.fill('input[name=externalId]', 'no-such-class');
  await page.click('form[role=search] button');
  await page.waitForSelector('text=No class has this external id.');
  await page.emulateMedia({ colorScheme: 'dark' });
  t.same(await axeViolations(page), [], 'axe: the empty list, dark');
  await page.emulateMedia({ colorScheme: 'light' });
});
