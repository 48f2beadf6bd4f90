import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { createTenant, startTestNode } from '../helpers/node.ts';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';

// The console's admins (docs/console-api.md#admins) in Chromium against a real node without SMTP: an
// owner invites an admin from the Settings page and is shown the link once; the invitee opens it, sets a
// password on the accept page and lands signed in, as an admin who sees the list without the owners'
// buttons; the owner disables another admin after a confirmation. axe-core on both pages, and each at
// 1280 and 360 px (AULA_SCREENSHOTS=docs/screenshots writes console-admins-*.png).

const PASSWORD = 'correct horse battery staple';
const OWNER = 'head@riverside.example';
const node = await startTestNode(t, { redis: false, overrides: { AULA_MEDIA_WORKERS: 0 } });
const tenant = await createTenant(node);
await node.app.sql`update organizations set name = 'Riverside Secondary School' where id = ${tenant.orgId}`;
await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email: OWNER, role: 'owner', password: PASSWORD });
await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email: 'it.office@riverside.example', role: 'admin', password: PASSWORD });
await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email: 'former.deputy@riverside.example', role: 'admin', password: PASSWORD });

const browser = await launchBrowser(t);
const report = (p: Page) => {
  p.on('console', (msg) => msg.type() === 'error' && process.stderr.write(`[page error] ${msg.text()}\n`));
  p.on('pageerror', (err) => process.stderr.write(`[page exception] ${err.message}\n`));
};
const ownerPage = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
report(ownerPage);

/** axe finds nothing serious; the page at 1280 px and at 360 px, fitting without sideways scrolling. */
async function look(t: Test, page: Page, name: string, at?: string): Promise<void> {
  await page.waitForSelector('.state.loading', { state: 'detached' });
  t.same(await axeViolations(page), [], `axe: no serious or critical violation on ${name}`);
  await screenshot(page, `console-admins-${name}-1280`);
  await page.setViewportSize({ width: 360, height: 740 });
  if (at) await page.locator(at).evaluate((e) => e.scrollIntoView({ block: 'start' }));
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  t.ok(wide <= 360, `${name} fits 360 px (${wide})`);
  t.same(await axeViolations(page), [], `axe: no serious or critical violation on ${name} at 360 px`);
  await screenshot(page, `console-admins-${name}-360`);
  await page.setViewportSize({ width: 1280, height: 800 });
}

let link = '';

t.test('an owner invites an admin from Settings and is shown the link once, with a copy button', async (t) => {
  await ownerPage.goto(`${node.url}/console/settings`);
  await ownerPage.waitForSelector('h1:text-is("Sign in")');
  await ownerPage.fill('input[name=orgId]', tenant.orgId);
  await ownerPage.fill('input[name=email]', OWNER);
  await ownerPage.fill('input[name=password]', PASSWORD);
  await ownerPage.click('button[type=submit]');
  await ownerPage.waitForSelector('h2:text-is("Admins")');
  await ownerPage.waitForSelector('td:has-text("it.office@riverside.example")');
  await ownerPage.click('button:text-is("Invite an admin")');
  await ownerPage.fill('input[name=inviteEmail]', 'new.deputy@riverside.example');
  await ownerPage.click('button:text-is("Send invitation")');
  const shown = await ownerPage.waitForSelector('[aria-label="Invitation link"]');
  link = (await shown.textContent())!.trim();
  t.match(link, new RegExp(`^${node.url}/console/accept\\?token=aula_inv_`), 'the link, as no SMTP is configured');
  t.ok(await ownerPage.$('button:text-is("Copy link")'), 'with a copy button');
  await ownerPage.waitForSelector('.invitations li:has-text("new.deputy@riverside.example")');
  await ownerPage.locator('#s-admins').evaluate((e) => e.scrollIntoView({ block: 'start' }));
  await look(t, ownerPage, 'settings', '#s-admins');
});

t.test('the owner disables an admin after confirming; the admin\'s open console goes back to sign-in on its next request', async (t) => {
  const theirs = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  report(theirs);
  await theirs.goto(`${node.url}/console`);
  await theirs.waitForSelector('h1:text-is("Sign in")');
  await theirs.fill('input[name=orgId]', tenant.orgId);
  await theirs.fill('input[name=email]', 'former.deputy@riverside.example');
  await theirs.fill('input[name=password]', PASSWORD);
  await theirs.click('button[type=submit]');
  await theirs.waitForSelector('h1:text-is("Overview")');

  await ownerPage.click('button[aria-label="Disable former.deputy@riverside.example"]');
  const dialog = ownerPage.locator('dialog[open]');
  t.match(await dialog.textContent(), /signed out everywhere at once/);
  await dialog.locator('button:text-is("Disable")').click();
  await ownerPage.waitForSelector('.flash:has-text("former.deputy@riverside.example is disabled")');
  await ownerPage.waitForSelector('tr:has-text("former.deputy@riverside.example") .badge:text-is("disabled")');
  t.notOk(await ownerPage.$('button[aria-label="Disable former.deputy@riverside.example"]'), 'no Disable button for a disabled admin');
  t.notOk(await ownerPage.$(`button[aria-label="Disable ${OWNER}"]`), 'nor for yourself');

  await theirs.click('nav#nav a:text-is("API keys")');
  await theirs.waitForSelector('h1:text-is("Sign in")');
  t.match(await theirs.textContent('.signin [role=status]'), /signed out or its owner or admin disabled/, 'the API\'s reason');

  // an owner enables them again, and makes them an owner: both confirmed, both in the list at once
  await ownerPage.click('button[aria-label="Enable former.deputy@riverside.example"]');
  t.match(await ownerPage.locator('dialog[open]').textContent(), /can sign in again/);
  await ownerPage.locator('dialog[open] button:text-is("Enable")').click();
  await ownerPage.waitForSelector('.flash:has-text("former.deputy@riverside.example is enabled")');
  await ownerPage.waitForSelector('tr:has-text("former.deputy@riverside.example") .badge:text-is("active")');
  await ownerPage.click('button[aria-label="Make owner: former.deputy@riverside.example"]');
  await ownerPage.locator('dialog[open] button:text-is("Make owner")').click();
  await ownerPage.waitForSelector('.flash:has-text("former.deputy@riverside.example is an owner now")');
  await ownerPage.waitForSelector('tr:has-text("former.deputy@riverside.example") td:text-is("Owner")');
  t.ok(await ownerPage.$('button[aria-label="Make admin: former.deputy@riverside.example"]'), 'and back, the other way');
  await look(t, ownerPage, 'settings-admins-roles', '#s-admins');
});

t.test('the accept page sets a password and lands signed in; an admin sees the list without the owners\' buttons', async (t) => {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  report(page);
  await page.goto(link);
  await page.waitForSelector('h1:text-is("Accept your invitation")');
  await page.waitForSelector('input[name=password]');
  t.match(page.url(), /\/console\/accept$/, 'the token leaves the address bar');
  t.match(await page.textContent('main'), /an admin of Riverside Secondary School/);
  t.equal(await page.inputValue('input[name=email]'), 'new.deputy@riverside.example');
  await look(t, page, 'accept');

  await page.fill('input[name=password]', 'riverside2024');
  await page.click('button[type=submit]');
  t.match(await page.textContent('[role=alert]'), /password/, 'the API\'s reason for refusing the password');
  await page.fill('input[name=password]', 'violet otter juggles lanterns');
  await page.click('button[type=submit]');
  await page.waitForSelector('h1:text-is("Overview")');
  t.match(page.url(), /\/console$/);
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('aula.console.orgs') ?? '[]'));
  t.match(stored[0], { orgId: tenant.orgId, email: 'new.deputy@riverside.example', role: 'admin', token: /^aula_as_/ });

  await page.goto(`${node.url}/console/settings`);
  await page.waitForSelector('td:has-text("new.deputy@riverside.example")');
  await page.waitForSelector('.state.loading', { state: 'detached' });
  t.notOk(await page.$('button:text-is("Invite an admin")'), 'an admin cannot invite');
  t.notOk(await page.$('button:text-is("Disable")'), 'nor disable');
  t.notOk(await page.$('button:text-is("Make owner")'), 'nor change a role');
  t.match(await page.textContent('.admins > p'), /Only owners invite them, change their role, and disable or enable them/);

  // the link is used now: opening it again says so in the API's words
  await page.goto(link);
  t.match(await page.textContent('[role=alert]'), /already accepted/);
});
