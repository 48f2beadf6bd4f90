import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { getOrg } from '../../src/services/orgs.ts';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { Receiver } from '../helpers/receiver.ts';
import { connect, eventually, goLive } from '../helpers/ws.ts';

// A long walk through real pages in Chromium: its own budget, above the suite's 120 s per file,
// so that a busy machine slows it without failing it.
t.setTimeout(300_000);

// The admin console (docs/console.md) in Chromium against a real node: an owner signs in, adds a webhook
// endpoint and sees its test delivery in the log, saves settings, ends a live meeting and downloads its
// attendance, deactivates a user; axe-core on every page, and each page at 1280 and 360 px wide
// (AULA_SCREENSHOTS=docs/screenshots writes the docs' pictures).

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'owner@school.example';

const node = await startTestNode(t, { redis: false, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true, AULA_MEDIA_WORKERS: 0 } });
const tenant = await createTenant(node);
await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email: EMAIL, role: 'owner', password: PASSWORD });
await node.app.sql`update organizations set name = 'Riverside Secondary School' where id = ${tenant.orgId}`;
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, fullName: string, role: string, email?: string) => (await call('POST', '/public/users', { externalId, fullName, role, ...(email ? { email } : {}) })).body.data;
const teacher = await user('t-100', 'Tina Teacher', 'TEACHER', 'tina@school.example');
const students = [await user('s-201', 'Sam Student', 'STUDENT'), await user('s-202', 'Priya Patel', 'STUDENT'), await user('s-203', 'Jonas Berg', 'STUDENT')];
const meeting = (title: string, start: string, externalId: string) => call('POST', '/public/meetings', { title, externalId, type: 'MEETING', hostUserId: teacher.id, scheduledStart: start, durationMinutes: 50 });
const created = await meeting('Year 9 Biology: cells and tissues', new Date(Date.now() - 2 * 60_000).toISOString(), 'bio-9a-1126');
const biology = created.body.data;
if (!biology) throw new Error(JSON.stringify(created.body));
const staff = (await meeting('Staff briefing', '2030-12-01T08:00:00Z', 'staff-1201')).body.data;
await meeting('Year 11 Chemistry revision', '2030-12-02T13:00:00Z', 'chem-11-1202');
const host = await goLive(t, node, tenant.key, biology.id, teacher.id);
const inClass = [];
for (const s of students.slice(1)) {
  const link = (await call('POST', `/public/meetings/${biology.id}/join-links`, { userId: s.id })).body.data;
  const session = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `laptop-${s.externalId}` } })).body.data;
  const ws = await connect(t, session.mediaUrl, session.mediaToken);
  await ws.type('joined');
  inClass.push(ws);
}
// a quiz answered and closed, a question asked: what the meeting's page shows besides attendance
const quiz = (await host.command({ type: 'open-poll', question: 'Which organelle makes ATP?', pollType: 'SINGLE_CHOICE', options: ['Nucleus', 'Mitochondrion', 'Ribosome'], correct: [1] })).poll.pollId;
await inClass[0]!.command({ type: 'answer-poll', pollId: quiz, choices: [1] });
await inClass[1]!.command({ type: 'answer-poll', pollId: quiz, choices: [0] });
await host.command({ type: 'close-poll', pollId: quiz, share: true });
await inClass[1]!.command({ type: 'ask-question', text: 'Do plant cells have mitochondria too?' });
// the weeks before, as the usage report reads them: stays in rooms on school days (for the overview's chart)
for (let d = 24; d >= 1; d--) {
  const day = new Date(Date.now() - d * 86_400_000);
  if (day.getUTCDay() === 0 || day.getUTCDay() === 6) continue;
  day.setUTCHours(9, 0, 0, 0);
  for (const [i, s] of students.entries()) {
    const left = new Date(day.getTime() + (25 + ((d * 7 + i * 11) % 35)) * 60_000);
    await node.app.sql`insert into attendance_intervals (meeting_id, participant_id, user_id, joined_at, left_at) values (${staff.id}, ${`p-${d}-${i}`}, ${s.id}, ${day}, ${left})`;
  }
}

const receiver = await Receiver.start(t);
const browser = await launchBrowser(t);
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
const page = await context.newPage();
page.on('console', (msg) => {
  if (msg.type() === 'error') process.stderr.write(`[page error] ${msg.text()}\n`);
});
page.on('pageerror', (err) => process.stderr.write(`[page exception] ${err.message}\n`));

/** axe finds nothing serious; the page at 1280 px and at 360 px. */
async function look(t: Test, name: string): Promise<void> {
  await page.waitForSelector('.state.loading', { state: 'detached' });
  const found = await axeViolations(page);
  t.same(found, [], `axe: no serious or critical violation on ${name}`, { violations: found });
  await screenshot(page, `console-${name}-1280`);
  await page.setViewportSize({ width: 360, height: 740 });
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  t.ok(wide <= 360, `${name} fits 360 px without scrolling sideways (${wide})`);
  const narrow = await axeViolations(page);
  t.same(narrow, [], `axe: no serious or critical violation on ${name} at 360 px`, { violations: narrow });
  await screenshot(page, `console-${name}-360`);
  await page.setViewportSize({ width: 1280, height: 800 });
}

const nav = async (label: string) => {
  await page.click(`nav#nav a:text-is("${label}")`);
  await page.waitForSelector(`h1:text-is("${label}")`);
};

t.test('sign in: /console asks for the organization, email and password; a wrong password shows the API\'s message', async (t) => {
  await page.goto(`${node.url}/console/webhooks`);
  await page.waitForSelector('h1:text-is("Sign in")');
  t.match(page.url(), /\/console\/sign-in\?next=%2Fconsole%2Fwebhooks$/, 'the sign-in page keeps where the admin was going');
  await look(t, 'sign-in');
  await page.fill('input[name=orgId]', tenant.orgId);
  await page.fill('input[name=email]', EMAIL);
  await page.fill('input[name=password]', 'not the password');
  await page.click('button[type=submit]');
  t.match(await page.textContent('[role=alert]'), /The organization, email or password is not right/, 'the error envelope\'s message');
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForSelector('h1:text-is("Webhooks")');
  t.match(page.url(), /\/console\/webhooks$/, 'then the page it was going to');
  t.match(await page.textContent('.org-name'), 'Riverside Secondary School');
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('aula.console.orgs') ?? '[]'));
  t.equal(stored[0]?.orgId, tenant.orgId, 'the organization is remembered on this browser');
});

t.test('overview: live rooms and usage', async (t) => {
  await nav('Overview');
  await page.waitForSelector('text=Year 9 Biology: cells and tissues');
  await page.waitForSelector('.stat-value');
  t.ok(await page.isVisible('.chart svg'), 'the chart per day');
  await look(t, 'overview');
  await page.emulateMedia({ colorScheme: 'dark' });
  await screenshot(page, 'console-overview-dark-1280');
  await page.emulateMedia({ colorScheme: 'light' });
});

t.test('webhooks: an endpoint added, its secret shown once, a test delivery seen in the log, its detail, redelivered', async (t) => {
  await nav('Webhooks');
  await page.waitForSelector('text=No webhook endpoints yet.');
  await look(t, 'webhooks-empty');
  await page.click('.page-actions a:text("Add endpoint")');
  await page.waitForSelector('h1:text-is("Add a webhook endpoint")');
  await page.fill('input[name=url]', receiver.url('/aula'));
  await page.fill('input[name=description]', 'Our LMS');
  await page.check('text=Only the types chosen below');
  for (const type of ['meeting.started', 'meeting.ended', 'attendance.finalized', 'user.deactivated']) await page.check(`input[value="${type}"]`);
  await look(t, 'webhook-new');
  await page.click('button:text("Add endpoint")');
  const secret = await page.textContent('.secret-value');
  t.match(secret, /^whsec_/, 'the secret, shown once');
  await look(t, 'webhook-created');
  await page.click('text=Go to the endpoint');
  await page.waitForSelector('h1:text-is("Webhook endpoint")');
  t.match(await page.textContent('.panel h2'), receiver.url('/aula'));
  await page.click('button:text("Send test event")');
  await page.waitForSelector('.flash:text("Test delivered")');
  await receiver.waitFor(1);
  t.equal(receiver.received[0]!.body.type, 'webhook.test', 'the receiver got webhook.test');
  await page.waitForSelector('table:has(caption:text("Deliveries")) code:text("webhook.test")');
  t.match(await page.textContent('table:has(caption:text("Deliveries")) tbody tr'), /succeeded[\s\S]*HTTP 200/, 'the log shows it delivered');

  // the log's filters live in the URL
  await page.selectOption('select[name=status]', 'FAILED');
  await page.waitForSelector('text=No delivery matches these filters.');
  t.match(page.url(), /status=FAILED/);
  await page.goBack();
  await page.waitForSelector('table:has(caption:text("Deliveries"))');

  await page.click('table:has(caption:text("Deliveries")) tbody tr a');
  await page.waitForSelector('h1:text-is("Delivery")');
  t.match(await page.textContent('pre.code >> nth=1'), /"type": "webhook.test"/, 'the detail shows the event sent');
  await page.click('button:text("Redeliver")');
  await page.waitForSelector('.flash:text("Redelivered")');
  await receiver.waitFor(2);
  t.equal(receiver.received[1]!.body.id, receiver.received[0]!.body.id, 'the same event again');
  await look(t, 'webhook-delivery');

  await page.click('text=← The endpoint\'s log');
  await page.waitForSelector('h1:text-is("Webhook endpoint")');
  await page.click('.row-actions button:text("Rotate secret")');
  await page.click('dialog[open] button:text("Rotate secret")');
  await page.waitForSelector('.secret-value');
  t.not(await page.textContent('.secret-value'), secret, 'a new secret');
  t.match(await page.textContent('.secret'), /two signatures/, 'the overlap of the old and new secrets is said');
  await look(t, 'webhook');
  await nav('Webhooks');
  await page.waitForSelector(`text=${receiver.url('/aula')}`);
  await look(t, 'webhooks');
});

t.test('settings: allowed origins, attendance rules and retention saved with PATCH /orgs/:orgId; a refused value shows the API\'s message', async (t) => {
  await nav('Settings');
  await page.fill('textarea[name=allowedOrigins]', 'not an origin');
  await page.click('button:text("Save settings")');
  await page.waitForSelector('.error-note');
  t.match(await page.textContent('.error-note'), /allowedOrigins/, 'the refused field');
  await page.fill('textarea[name=allowedOrigins]', 'https://lms.riverside.example\nhttps://staging.riverside.example:8443');
  await page.fill('input[name=lateAfterMinutes]', '7');
  await page.fill('input[name=recordingRetentionDays]', '180');
  await page.click('button:text("Save settings")');
  await page.waitForSelector('.flash:text("Settings saved.")');
  const [org] = await node.app.sql<{ allowedOrigins: string[]; recordingRetentionDays: number; attendanceRules: any }[]>`select allowed_origins, recording_retention_days, attendance_rules from organizations where id = ${tenant.orgId}`;
  t.same(org!.allowedOrigins, ['https://lms.riverside.example', 'https://staging.riverside.example:8443']);
  t.equal(org!.recordingRetentionDays, 180);
  t.equal(org!.attendanceRules.lateAfterMinutes ?? org!.attendanceRules.late_after_minutes, 7);

  // the school's own apps: a bad fingerprint is refused with the API's words; then both apps are set and vouched for
  const print = Array.from({ length: 32 }, (_, i) => (i * 7 + 16).toString(16).toUpperCase().padStart(2, '0')).join(':');
  await page.fill('input[name=androidPackageName]', 'org.riverside.classroom');
  await page.fill('textarea[name=androidFingerprints]', 'AB:CD');
  await page.click('button:text("Save settings")');
  await page.waitForSelector('.error-note:has-text("mobileApps")');
  await page.fill('textarea[name=androidFingerprints]', print);
  await page.fill('input[name=iosTeamId]', 'ABCDE12345');
  await page.fill('input[name=iosBundleId]', 'org.riverside.classroom');
  await page.click('button:text("Save settings")');
  // the flash of the save before may still show: wait for the row itself
  const apps = async () => (await getOrg(node.app.sql, tenant.orgId)).mobileApps;
  await eventually(async () => (await apps()).ios !== null, 10_000);
  await page.waitForSelector('.flash:text("Settings saved.")');
  t.same(await apps(), { android: { packageName: 'org.riverside.classroom', sha256CertFingerprints: [print] }, ios: { teamId: 'ABCDE12345', bundleId: 'org.riverside.classroom' } });
  const links = await (await fetch(`${node.url}/.well-known/assetlinks.json`)).text();
  t.match(links, /org\.riverside\.classroom/, 'and this server vouches for the Android app');
  await page.locator('#s-apps').evaluate((e) => e.scrollIntoView({ block: 'center' }));
  await screenshot(page, 'console-settings-apps-1280');
  await page.evaluate(() => window.scrollTo(0, 0));
  await look(t, 'settings');
  // emptied, a platform is removed
  await page.fill('input[name=iosTeamId]', '');
  await page.fill('input[name=iosBundleId]', '');
  await page.click('button:text("Save settings")');
  await eventually(async () => (await apps()).ios === null, 10_000);
  await page.waitForSelector('.flash:text("Settings saved.")');
  t.equal((await apps()).ios, null);
  t.equal((await apps()).android?.packageName, 'org.riverside.classroom', 'the other platform stays');
});

t.test('meetings: filters in the URL, a live meeting ended after confirming, its attendance downloaded as CSV', async (t) => {
  await nav('Meetings');
  await page.waitForSelector('text=Staff briefing');
  await look(t, 'meetings');
  await page.selectOption('select[name=status]', 'LIVE');
  await page.waitForSelector('text=Staff briefing', { state: 'detached' });
  t.match(page.url(), /\/console\/meetings\?status=LIVE$/);
  await page.click('text=Year 9 Biology: cells and tissues');
  await page.waitForSelector('h1:text-is("Year 9 Biology: cells and tissues")');
  t.equal(await page.evaluate(() => document.activeElement?.id), 'page-title', 'the new page\'s heading has the focus');
  await page.waitForSelector('table:has(caption:text("Attendance"))');
  await look(t, 'meeting-live');

  await page.click('.page-actions button:text("End meeting")');
  await page.waitForSelector('dialog[open]');
  await page.keyboard.press('Escape');
  await page.waitForSelector('dialog[open]', { state: 'detached' });
  t.equal((await call('GET', `/public/meetings/${biology.id}`)).body.data.status, 'LIVE', 'Escape cancels');
  await page.click('.page-actions button:text("End meeting")');
  await page.click('dialog[open] button:text("End meeting now")');
  await page.waitForSelector('.flash:text("The meeting has ended.")');
  t.equal((await call('GET', `/public/meetings/${biology.id}`)).body.data.status, 'ENDED');
  t.match(await page.textContent('.facts'), /ended/);

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:text("Download CSV")')]);
  t.equal(download.suggestedFilename(), 'attendance-bio-9a-1126.csv');
  const csv = readFileSync((await download.path())!, 'utf8');
  t.match(csv.split('\n')[0], /^meetingId,externalMeetingId,/, 'the CSV header');
  t.match(csv, /Tina Teacher/, 'the teacher attended');
  await look(t, 'meeting');
});

t.test('users: pages by cursor, found by external id, deactivated after confirming', async (t) => {
  // a class list's worth more, so the list has a second page (25 a page)
  await call('POST', '/public/users/bulk', { users: Array.from({ length: 26 }, (_, i) => ({ externalId: `s-${300 + i}`, fullName: `Student ${300 + i}`, role: 'STUDENT' })) });
  await eventually(async () => (await call('GET', '/public/users?limit=100')).body.data.length === 30, 15_000);
  await nav('Users');
  await page.waitForSelector('a:text("Next page →")');
  t.equal(await page.locator('table:has(caption:text("Users")) tbody tr').count(), 25, 'the first page');
  await page.click('a:text("Next page →")');
  await page.waitForSelector('text=Sam Student');
  t.match(page.url(), /\/console\/users\?cursor=/, 'the cursor is in the address');
  t.equal(await page.locator('table:has(caption:text("Users")) tbody tr').count(), 5, 'the second page');
  await look(t, 'users');
  await page.click('a:text("← First page")');
  await page.waitForSelector('text=Student 325');
  await page.fill('input[name=q]', 'sam stu');
  await page.click('form[role=search] button');
  await page.waitForSelector('text=Priya Patel', { state: 'detached' });
  t.match(page.url(), /q=sam(\+|%20)stu/);
  await page.waitForSelector('table:has(caption:text("Users")) >> text=Sam Student');
  t.equal(await page.locator('table:has(caption:text("Users")) tbody tr').count(), 1, 'found by part of the name, ignoring case');
  await page.click('button[aria-label="Deactivate Sam Student"]');
  await page.click('dialog[open] button:text("Deactivate user")');
  await page.waitForSelector('.flash:text("Sam Student is deactivated.")');
  t.equal((await call('GET', '/public/users/s-201')).body.data.status, 'DEACTIVATED');
  t.ok(await page.isVisible('.badge:text("deactivated")'));
  // a user's meetings: those they host or were in
  await page.click('a[aria-label="Meetings of Sam Student"]');
  await page.waitForSelector('text=Meetings Sam Student hosts or was in, by scheduled start.');
  t.match(page.url(), /\/console\/meetings\?userId=usr_/);
  await page.waitForSelector('.state.loading', { state: 'detached' });
  t.equal(await page.locator('.error-note').count(), 0, 'answered without an error');
});

t.test('webhooks: what the endpoint missed while its receiver was down is redelivered from its page', async (t) => {
  const [endpoint] = (await call('GET', '/public/webhooks')).body.data;
  const deactivated = (externalId: string) => receiver.received.filter((r) => r.body?.type === 'user.deactivated' && r.body.data?.externalId === externalId);
  await eventually(() => deactivated('s-201').length > 0, 15_000); // the one before is delivered: only the next is missed
  receiver.answer = () => ({ status: 503, body: 'down for maintenance' });
  await call('POST', '/public/users/s-203/deactivate');
  await eventually(async () => (await call('GET', `/public/webhooks/${endpoint.id}/deliveries?status=FAILED`)).body.data.length > 0, 15_000);
  t.equal(deactivated('s-203').length, 1, 'the receiver answered 503 to user.deactivated');
  const missed = deactivated('s-203')[0]!.body;
  receiver.answer = () => ({ status: 200, body: 'ok' });

  await nav('Webhooks');
  await page.click('table:has(caption:text("Webhook endpoints")) a');
  await page.waitForSelector('text=failing since');
  await page.click('button:text("Redeliver missed events…")');
  await page.click('dialog[open] button:text("Redeliver them")');
  await page.waitForSelector('.flash:text("Redelivered 1 missed event: 1 delivered")');
  t.equal(deactivated('s-203').length, 2, 'sent again');
  t.equal(deactivated('s-203')[1]!.body.id, missed.id, 'the same event, delivered');
});

t.test('webhooks: an endpoint the server turned off is announced on the list, with what to do', async (t) => {
  // as the delivery worker leaves it after 3 days of failures (set in the table: the page only reads it)
  await node.app.sql`update webhook_endpoints set status = 'DISABLED', disabled_reason = 'FAILING', disabled_at = now() where org_id = ${tenant.orgId}`;
  await nav('Webhooks');
  await page.waitForSelector('.banner.bad');
  t.match(await page.textContent('.banner.bad'), /turned off because deliveries kept failing[\s\S]*every delivery failed for 3 days/);
  await look(t, 'webhooks-auto-disabled');
  await node.app.sql`update webhook_endpoints set status = 'ACTIVE', disabled_reason = null, disabled_at = null where org_id = ${tenant.orgId}`;
});

t.test('recordings: played through a playback link, deleted after confirming', async (t) => {
  await nav('Recordings');
  await page.waitForSelector('text=No recordings yet.');
  // two finished recordings of the class, as the recorder leaves them (their files are not needed to list and link them)
  for (const [id, minutesAgo, seconds] of [['rec_console_a', 30, 2710], ['rec_console_b', 10, 1260]] as const) {
    const at = new Date(Date.now() - minutesAgo * 60_000);
    await node.app.sql`insert into recordings (id, org_id, meeting_id, status, automatic, started_at, ended_at, duration_seconds, file_size_bytes, mime_type, updated_at)
      values (${id}, ${tenant.orgId}, ${biology.id}, 'READY', true, ${at}, ${new Date(at.getTime() + seconds * 1000)}, ${seconds}, ${seconds * 52_000}, 'video/mp4', now())`;
  }
  await page.reload();
  await page.waitForSelector('.cards .card-item');
  t.equal(await page.locator('.boot').count(), 0, 'a reload draws the page alone, without the shell\'s "Loading…"');
  t.equal(await page.locator('.cards .card-item').count(), 2);
  await page.click('.cards .card-item >> nth=0 >> button:text("Play")');
  await page.waitForSelector('.player iframe');
  t.match(await page.getAttribute('.player iframe', 'src'), /\/api\/v1\/recordings\/rec_console_b\/player\?exp=\d+&sig=/, 'the player page, framed');
  await page.frameLocator('.player iframe').locator('h1:text("Class recording")').waitFor();
  t.pass('the player page is drawn inside the console (its frame-ancestors allow this server)');
  t.match(await page.getAttribute('.player a:text("Open the player page")', 'href'), /\/api\/v1\/recordings\/rec_console_b\/player\?exp=\d+&sig=/, 'and the player page (embedUrl)');
  // the notes a teacher reviews before students see them: a finished run of the notes job, as it leaves them
  const transcript = { language: 'en', durationMs: 1_260_000, speakers: [{ id: 'p1', userId: teacher.id }], segments: [{ startMs: 1000, endMs: 4000, text: 'Cells are the units of life.', speaker: 'p1' }] };
  const made = { summary: { overview: 'cells are the units of life', bullets: ['cells divide'] }, chapters: [{ title: 'Cells', startSeconds: 0 }], quiz: [] };
  await node.app.sql`insert into recording_notes (id, org_id, recording_id, job_id, status, manual, language, transcript, word_count, duration_ms, notes, created_at, finished_at)
    values ('nts_console_b', ${tenant.orgId}, 'rec_console_b', 'job_console_b', 'READY', false, 'en', ${node.app.sql.json(transcript)}, 6, 1260000, ${node.app.sql.json(made)}, now(), now())`;
  await page.click('.cards .card-item >> nth=0 >> button:text("Notes")');
  await page.waitForSelector('.notes-editor textarea[name=overview]');
  t.equal(await page.inputValue('textarea[name=overview]'), 'cells are the units of life');
  await page.fill('textarea[name=overview]', 'Cells are the units of life; today, how they divide.');
  await page.fill('textarea[name=chapters]', '0:00 Cells\n12:30 How cells divide');
  await page.check('input[name=hidden]');
  await page.click('.notes-editor button:text("Save notes")');
  await page.waitForSelector('.notes-editor .flash:text("Notes saved. They are hidden from viewers until you show them.")');
  t.match(await page.locator('.transcript').textContent(), /Tina Teacher: Cells are the units of life\./, 'the transcript to check against, with who spoke');
  const reviewed = await node.app.services.recordingNotes.current(node.app.sql, tenant.orgId, 'rec_console_b');
  t.match(reviewed, { notes: { summary: { overview: 'Cells are the units of life; today, how they divide.' }, chapters: [{ title: 'Cells', startSeconds: 0 }, { title: 'How cells divide', startSeconds: 750 }] }, hidden: true });
  await page.fill('textarea[name=chapters]', 'later: a chapter');
  await page.click('.notes-editor button:text("Save notes")');
  await page.waitForSelector('.notes-editor .error-note:has-text("Each chapter is a time and a title")');
  await look(t, 'recording-notes');
  await page.click('.cards .card-item >> nth=0 >> button:text("Notes")');
  // making notes again answers a job, or (no transcription engine on this test server) the API's reason
  await page.click('.cards .card-item >> nth=0 >> button:text("Make notes again")');
  await page.waitForSelector('.cards .card-item >> nth=0 >> .card-note, .error-note');
  t.pass('the answer to "Make notes again" is shown');
  await look(t, 'recordings');
  // a recording whose notes could not be made: the editor says why instead of the form
  await node.app.sql`insert into recording_notes (id, org_id, recording_id, job_id, status, manual, language, failure_reason, created_at, finished_at)
    values ('nts_console_a', ${tenant.orgId}, 'rec_console_a', 'job_console_a', 'FAILED', false, 'en', 'The transcription engine (openai) failed: 401 the key was refused.', now(), now())`;
  await page.click('.cards .card-item >> nth=1 >> button:text("Notes")');
  const failed = page.locator('.cards .card-item >> nth=1 >> .bad-text:has-text("Making the notes failed")');
  await failed.waitFor();
  t.match(await failed.textContent(), /failed .*: The transcription engine \(openai\) failed: 401 the key was refused\. Make notes again when the cause is fixed\./);
  t.equal(await page.locator('.cards .card-item >> nth=1 >> textarea[name=overview]').count(), 0, 'no form without notes');
  await failed.scrollIntoViewIfNeeded();
  await look(t, 'recording-notes-failed');
  await page.click('.cards .card-item >> nth=1 >> button:text("Delete")');
  await page.click('dialog[open] button:text("Delete recording")');
  await page.waitForSelector('.badge:text("deleted")');
  t.equal((await call('GET', '/public/recordings/rec_console_a')).body.data.status, 'DELETED');
});

t.test('API keys and the audit log', async (t) => {
  await nav('API keys');
  await page.waitForSelector('.state.loading', { state: 'detached' });
  if (await page.isVisible('.page-actions button:text("Create key")')) {
    // the server has the API keys routes (issue 28): a key made here works on the public API, and revoked it does not
    await page.click('.page-actions button:text("Create key")');
    await page.fill('input[name=name]', 'Moodle sync');
    await look(t, 'api-key-new');
    await page.click('form button[type=submit]:text("Create key")');
    const key = (await page.textContent('.secret-value'))!;
    t.match(key, /^aula_sk_/, 'the key, shown once');
    t.equal((await api(node, 'GET', '/public/users', { key })).status, 200, 'it works on the public API');
    const prefix = key.slice(0, 12);
    // rolled with an hour's overlap: a new key, and the old one still works until then
    await page.click(`button[aria-label="Roll Moodle sync (${prefix}…)"]`);
    await page.selectOption('dialog[open] select', { label: '1 hour' });
    await page.click('dialog[open] button:text("Roll key")');
    await page.waitForSelector(`.secret-value:not(:text("${key}"))`);
    const rolled = (await page.textContent('.secret-value'))!;
    t.match(await page.textContent('.secret'), /The old key works until/, 'the overlap is said');
    t.equal((await api(node, 'GET', '/public/users', { key: rolled })).status, 200, 'the new key works');
    t.equal((await api(node, 'GET', '/public/users', { key })).status, 200, 'the old one too, during the overlap');
    await page.waitForSelector('.badge:text("expiring")');
    await look(t, 'api-keys');
    await page.click(`button[aria-label="Revoke Moodle sync (${prefix}…)"]`);
    await page.click('dialog[open] button:text("Revoke key")');
    await page.waitForSelector('.flash:text("is revoked")');
    t.equal((await api(node, 'GET', '/public/users', { key })).body.error?.code, 'api_key_revoked', 'revoked, the old key is refused at once');
    t.equal((await api(node, 'GET', '/public/users', { key: rolled })).status, 200, 'the new one still works');
  } else {
    await look(t, 'api-keys');
  }
  await nav('Audit log');
  await look(t, 'audit-log');
});

t.test('dark, as the system says: every page without a violation', async (t) => {
  await page.emulateMedia({ colorScheme: 'dark' });
  for (const label of ['Overview', 'Meetings', 'Recordings', 'Users', 'Webhooks', 'API keys', 'Settings', 'Audit log']) {
    await nav(label);
    await page.waitForSelector('.state.loading', { state: 'detached' });
    const found = await axeViolations(page);
    t.same(found, [], `axe: ${label}, dark`, { violations: found });
  }
  await nav('Webhooks');
  await page.click('table:has(caption:text("Webhook endpoints")) a');
  await page.waitForSelector('table:has(caption:text("Deliveries"))');
  await screenshot(page, 'console-webhook-dark-1280');
  await page.emulateMedia({ colorScheme: 'light' });
});

t.test('at 360 px the navigation is behind a menu button; a second organization signed in and switched to; the skip link; sign out forgets the session, keeps the organization', async (t) => {
  await page.setViewportSize({ width: 360, height: 740 });
  t.notOk(await page.isVisible('nav#nav'), 'the navigation is folded');
  await page.click('button.menu-button');
  t.equal(await page.getAttribute('button.menu-button', 'aria-expanded'), 'true');
  await page.waitForSelector('nav#nav a:text-is("Webhooks")');
  const found = await axeViolations(page);
  t.same(found, [], 'axe: the open menu', { violations: found });
  await screenshot(page, 'console-menu-360');
  await page.click('nav#nav a:text-is("Webhooks")');
  await page.waitForSelector('h1:text-is("Webhooks")');
  t.notOk(await page.isVisible('nav#nav'), 'the menu folds after choosing a page');
  await page.setViewportSize({ width: 1280, height: 800 });

  // a second school this admin also runs: signed in beside the first, then switched between without a password
  const other = await createTenant(node);
  await node.app.sql`update organizations set name = 'Hillside Primary', short_name = 'hillside' where id = ${other.orgId}`;
  await node.app.services.admins.create(node.app.sql, { orgId: other.orgId, email: EMAIL, role: 'admin', password: PASSWORD });
  await page.click('.org-button');
  await page.click('text=Sign in to another organization…');
  await page.waitForSelector('h1:text-is("Sign in")');
  t.ok(await page.isVisible('button:text("Back to Riverside Secondary School")'), 'the way back is offered');
  await page.fill('input[name=orgId]', 'Hillside'); // its short name, as an admin would type it
  await page.fill('input[name=email]', EMAIL);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForSelector('.org-name:text("Hillside Primary")');
  await page.click('.org-button');
  await screenshot(page, 'console-org-menu-1280');
  await page.click('#org-menu button:has-text("Riverside Secondary School")');
  await page.waitForSelector('.org-name:text("Riverside Secondary School")');
  await page.waitForSelector('h1:text-is("Overview")');
  t.pass('switched back without signing in again');

  // the keyboard: the skip link comes first and leads to the page
  await page.reload();
  await page.waitForSelector('h1:text-is("Overview")');
  await page.keyboard.press('Tab');
  t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to the page', 'the first Tab reaches the skip link');
  await page.keyboard.press('Enter');
  t.equal(await page.evaluate(() => document.activeElement?.id), 'main', 'Enter on it moves the focus to the page');

  await page.click('.org-button');
  await page.click('text=Sign out');
  await page.waitForSelector('h1:text-is("Sign in")');
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('aula.console.orgs') ?? '[]'));
  const riverside = stored.find((o: { orgId: string }) => o.orgId === tenant.orgId);
  t.equal(riverside?.token, null, 'its session is forgotten, the organization still offered');
  t.ok(stored.find((o: { orgId: string }) => o.orgId === other.orgId)?.token, 'the other one stays signed in');
  t.equal(await page.inputValue('input[name=orgId]'), tenant.orgId, 'signing in again starts from it');
  await eventually(async () => (await node.app.sql`select count(*)::int as n from admin_sessions where org_id = ${tenant.orgId} and revoked_at is null`)[0]!.n === 0, 5000);
  t.pass('the session is revoked on the server');
  await look(t, 'sign-in-again');
});
