import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { changeAdminRole, disableAdmin, enableAdmin, INVITATION_TTL_MS } from '../../src/services/admin-invitations.ts';
import { assertError } from '../helpers/assert.ts';
import { api, createTenant, createTestDatabase, startTestNode, type Tenant } from '../helpers/node.ts';
import type { Node } from '../../src/server/node.ts';

// The console's admins (docs/console-api.md): owners invite owners and admins with a one-time link valid
// 24 hours, revoke pending invitations and disable admins; admins only list. Two nodes share Postgres and
// Redis (no SMTP: the link is in the answer), a third has AULA_SMTP_URL (the link is emailed); time is
// on a manual clock, never slept.
const clock = new ManualClock(Date.now());
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const a = await startTestNode(t, { clock, databaseUrl, redisPrefix });
const b = await startTestNode(t, { clock, databaseUrl, redisPrefix });
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet otter juggles lanterns';

interface Signed {
  id: string;
  email: string;
  bearer: string;
}

async function signIn(tenant: Tenant, email: string, password = PASSWORD, node: Node = a): Promise<string> {
  const res = await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email, password } });
  if (res.status !== 200) throw new Error(`sign-in failed: ${JSON.stringify(res.body)}`);
  return res.body.data.sessionToken;
}

async function adminOf(tenant: Tenant, email: string, role: 'owner' | 'admin'): Promise<Signed> {
  const made = await a.app.services.admins.create(a.app.sql, { orgId: tenant.orgId, email, role, password: PASSWORD });
  return { id: made.id, email, bearer: await signIn(tenant, email) };
}

const tenant = await createTenant(a);
const owner = await adminOf(tenant, 'owner@school.example', 'owner');
const admin = await adminOf(tenant, 'admin@school.example', 'admin');
const base = `/orgs/${tenant.orgId}/admins`;
const invite = (by: { bearer: string }, body: unknown, node: Node = a) => api(node, 'POST', `${base}/invitations`, { bearer: by.bearer, body });
const accept = (token: string, password = NEW_PASSWORD, node: Node = a) => api(node, 'POST', '/auth/accept-invitation', { body: { token, password } });
const tokenOf = (acceptUrl: string) => new URL(acceptUrl).searchParams.get('token')!;
const audit = async (q = '') => (await api(a, 'GET', `/orgs/${tenant.orgId}/audit-log${q}`, { bearer: owner.bearer })).body.data as any[];

t.test('invite → accept → signed in; the link works once; the listing and the audit log say who invited whom', async (t) => {
  const res = await invite(owner, { email: 'New.Teacher@School.example', role: 'admin' });
  t.equal(res.status, 201, JSON.stringify(res.body));
  const inv = res.body.data;
  t.match(inv, { id: /^ainv_/, email: 'new.teacher@school.example', role: 'admin', status: 'PENDING', invitedBy: { id: owner.id, email: owner.email }, emailed: false, acceptedAt: null, revokedAt: null });
  t.equal(inv.expiresAt, new Date(clock.now() + INVITATION_TTL_MS).toISOString(), 'valid 24 hours');
  t.match(inv.acceptUrl, new RegExp(`^${a.url}/console/accept\\?token=aula_inv_[A-Za-z0-9_-]{43}$`), 'no SMTP: the link is in the answer');
  const token = tokenOf(inv.acceptUrl);
  t.equal(await a.app.sql`select 1 from email_outbox where to_address = 'new.teacher@school.example'`.then((r) => r.length), 0, 'no email queued');

  const pending = await api(b, 'GET', `${base}/invitations?status=PENDING`, { bearer: admin.bearer });
  t.equal(pending.status, 200, 'admins may list');
  t.match(pending.body.data, [{ id: inv.id, status: 'PENDING' }]);
  t.notOk(pending.text.includes(token), 'the listing never holds the link');
  const [row] = await a.app.sql<{ tokenHash: Buffer }[]>`select token_hash from admin_invitations where id = ${inv.id}`;
  t.notOk(row!.tokenHash.toString('utf8').includes('aula_inv_'), 'stored hashed');

  const peek = await api(b, 'POST', '/auth/invitation', { body: { token } });
  t.equal(peek.status, 200);
  t.match(peek.body.data, { email: 'new.teacher@school.example', role: 'admin', orgId: tenant.orgId, orgName: String, expiresAt: inv.expiresAt });

  const weak = assertError(t, await accept(token, 'password1234'), 400, 'validation_failed');
  t.match(weak.fields, [{ field: 'password', message: /too easy to guess/ }]);
  assertError(t, await accept(token, 'short'), 400, 'validation_failed');
  assertError(t, await accept(token, 'new.teacher@school.example'), 400, 'validation_failed'); // the email itself

  const ok = await accept(token, NEW_PASSWORD, b);
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.match(ok.body.data, { admin: { id: /^adm_/, email: 'new.teacher@school.example', role: 'admin', orgId: tenant.orgId }, sessionToken: /^aula_as_/, csrfToken: String, expiresAt: String });
  t.match(ok.headers.get('set-cookie'), /^aula_session=aula_as_.*HttpOnly/);
  const newcomer = ok.body.data.admin;
  const me = await api(a, 'GET', '/auth/me', { bearer: ok.body.data.sessionToken });
  t.equal(me.status, 200, 'signed in on every node');
  t.equal(me.body.data.admin.id, newcomer.id);
  t.ok(await signIn(tenant, 'new.teacher@school.example', NEW_PASSWORD), 'signs in with the password set');

  assertError(t, await accept(token), 409, 'admin_invitation_used');
  assertError(t, await api(a, 'POST', '/auth/invitation', { body: { token } }), 409, 'admin_invitation_used');
  assertError(t, await accept('aula_inv_' + 'x'.repeat(43)), 401, 'admin_invitation_invalid');
  assertError(t, await accept('nonsense'), 401, 'admin_invitation_invalid');

  const admins = (await api(a, `GET`, base, { bearer: admin.bearer })).body.data as any[];
  t.match(admins.find((m) => m.id === newcomer.id), { email: 'new.teacher@school.example', role: 'admin', status: 'ACTIVE', invitedBy: { id: owner.id, email: owner.email }, lastSignInAt: String, disabledAt: null });
  t.match(admins.find((m) => m.id === owner.id), { role: 'owner', status: 'ACTIVE', invitedBy: null });
  const one = await api(a, 'GET', `${base}/${newcomer.id}`, { bearer: owner.bearer });
  t.equal(one.body.data.id, newcomer.id);
  const accepted = (await api(a, 'GET', `${base}/invitations?status=ACCEPTED`, { bearer: owner.bearer })).body.data as any[];
  t.match(accepted.find((i) => i.id === inv.id), { status: 'ACCEPTED', adminId: newcomer.id, acceptedAt: String });

  const [invited] = await audit('?action=admin.invited');
  t.match(invited, { actor: { type: 'admin', id: owner.id, email: owner.email }, target: { type: 'admin' }, details: { invitationId: inv.id, email: 'new.teacher@school.example', role: 'admin', emailed: false } });
  const [joined] = await audit('?action=admin.joined');
  t.match(joined, { actor: { type: 'admin', id: newcomer.id }, target: { type: 'admin', id: newcomer.id }, details: { invitationId: inv.id, role: 'admin' } });
  t.notOk(JSON.stringify(await audit()).includes(token), 'no link in the audit log');

  assertError(t, await invite(owner, { email: 'new.teacher@school.example', role: 'owner' }), 409, 'admin_exists');
});

t.test('a revoked invitation, and one replaced by a newer one, refuse their link', async (t) => {
  const first = (await invite(owner, { email: 'twice@school.example', role: 'admin' })).body.data;
  const second = (await invite(owner, { email: 'twice@school.example', role: 'owner' }, b)).body.data;
  assertError(t, await accept(tokenOf(first.acceptUrl)), 410, 'admin_invitation_revoked');
  const del = await api(b, 'DELETE', `${base}/invitations/${second.id}`, { bearer: owner.bearer });
  t.equal(del.status, 200, JSON.stringify(del.body));
  t.match(del.body.data, { id: second.id, status: 'REVOKED', revokedAt: String });
  t.notOk('acceptUrl' in del.body.data);
  assertError(t, await accept(tokenOf(second.acceptUrl)), 410, 'admin_invitation_revoked');
  assertError(t, await api(a, 'POST', '/auth/invitation', { body: { token: tokenOf(second.acceptUrl) } }), 410, 'admin_invitation_revoked');
  const again = await api(a, 'DELETE', `${base}/invitations/${second.id}`, { bearer: owner.bearer });
  t.equal(again.body.data.revokedAt, del.body.data.revokedAt, 'revoking again changes nothing');
  const entries = (await audit('?action=admin.invitation_revoked')).filter((e) => e.details.invitationId === second.id);
  t.equal(entries.length, 1);
  t.match(entries[0], { actor: { type: 'admin', id: owner.id }, details: { email: 'twice@school.example', role: 'owner' } });
  assertError(t, await api(a, 'DELETE', `${base}/invitations/ainv_00000000000000000000000000`, { bearer: owner.bearer }), 404, 'admin_invitation_not_found');
  const accepted = (await api(a, 'GET', `${base}/invitations?status=ACCEPTED`, { bearer: owner.bearer })).body.data[0];
  assertError(t, await api(a, 'DELETE', `${base}/invitations/${accepted.id}`, { bearer: owner.bearer }), 409, 'admin_invitation_used');
});

t.test('two tabs accepting one link at once make one admin', async (t) => {
  const inv = (await invite(owner, { email: 'eager@school.example', role: 'admin' })).body.data;
  const token = tokenOf(inv.acceptUrl);
  const [x, y] = await Promise.all([accept(token, NEW_PASSWORD, a), accept(token, NEW_PASSWORD, b)]);
  t.same([x.status, y.status].sort(), [200, 409], `${x.status} ${y.status}`);
  t.equal((x.status === 409 ? x : y).body.error.code, 'admin_invitation_used');
  t.equal((await a.app.sql`select 1 from admins where email = 'eager@school.example'`).length, 1);
});

t.test('with the session cookie, inviting needs the X-CSRF-Token header', async (t) => {
  const signed = await api(a, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: owner.email, password: PASSWORD } });
  const cookie = `aula_session=${signed.body.data.sessionToken}`;
  const body = { email: 'csrf@school.example', role: 'admin' };
  assertError(t, await api(a, 'POST', `${base}/invitations`, { headers: { cookie }, body }), 403, 'csrf_failed');
  const ok = await api(a, 'POST', `${base}/invitations`, { headers: { cookie, 'x-csrf-token': signed.body.data.csrfToken }, body });
  t.equal(ok.status, 201);
});

t.test('an admin lists but may not invite, revoke or disable: owner_required', async (t) => {
  t.equal((await api(a, 'GET', base, { bearer: admin.bearer })).status, 200);
  assertError(t, await invite(admin, { email: 'sneaky@school.example', role: 'owner' }), 403, 'owner_required');
  const inv = (await invite(owner, { email: 'pending@school.example', role: 'admin' })).body.data;
  assertError(t, await api(a, 'DELETE', `${base}/invitations/${inv.id}`, { bearer: admin.bearer }), 403, 'owner_required');
  assertError(t, await api(a, 'POST', `${base}/${owner.id}/disable`, { bearer: admin.bearer }), 403, 'owner_required');
  t.equal((await api(a, 'GET', `${base}/${owner.id}`, { bearer: owner.bearer })).body.data.status, 'ACTIVE');
  for (const body of [{ email: 'not an email', role: 'admin' }, { email: 'x@school.example', role: 'superuser' }, { email: 'x@school.example' }]) {
    assertError(t, await invite(owner, body), 400, 'validation_failed');
  }
  t.equal((await a.app.sql`select 1 from admin_invitations where email = 'sneaky@school.example'`).length, 0);
});

t.test('disabling an admin refuses their open console at once on every node; not yourself; once in the log', async (t) => {
  const leaving = await adminOf(tenant, 'leaving@school.example', 'admin');
  const onB = await signIn(tenant, leaving.email, PASSWORD, b);
  t.equal((await api(a, 'GET', `/orgs/${tenant.orgId}`, { bearer: leaving.bearer })).status, 200, 'node a caches the session');
  t.equal((await api(b, 'GET', `/orgs/${tenant.orgId}`, { bearer: leaving.bearer })).status, 200, 'node b too');
  t.equal((await api(b, 'GET', `/orgs/${tenant.orgId}`, { bearer: onB })).status, 200, 'and the second session');

  const res = await api(a, 'POST', `${base}/${leaving.id}/disable`, { bearer: owner.bearer });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body.data, { id: leaving.id, status: 'DISABLED', disabledAt: String });
  for (const [node, bearer] of [[a, leaving.bearer], [b, leaving.bearer], [a, onB], [b, onB]] as const) {
    assertError(t, await api(node, 'GET', `/orgs/${tenant.orgId}`, { bearer }), 401, 'admin_session_revoked');
  }
  assertError(t, await api(b, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: leaving.email, password: PASSWORD } }), 403, 'admin_disabled');

  const again = await api(b, 'POST', `${base}/${leaving.id}/disable`, { bearer: owner.bearer });
  t.equal(again.body.data.disabledAt, res.body.data.disabledAt, 'disabling again changes nothing');
  const entries = (await audit('?action=admin.disabled')).filter((e) => e.target.id === leaving.id);
  t.equal(entries.length, 1);
  t.match(entries[0], { actor: { type: 'admin', id: owner.id, email: owner.email }, details: { email: leaving.email } });

  assertError(t, await api(a, 'POST', `${base}/${owner.id}/disable`, { bearer: owner.bearer }), 409, 'cannot_disable_self');
  assertError(t, await api(a, 'POST', `${base}/adm_00000000000000000000000000/disable`, { bearer: owner.bearer }), 404, 'admin_not_found');
});

t.test('an owner who is disabled loses their pending invitations; the last active owner is never disabled', async (t) => {
  const school = await createTenant(a);
  const first = await adminOf(school, 'first@school.example', 'owner');
  const second = await adminOf(school, 'second@school.example', 'owner');
  const p = `/orgs/${school.orgId}/admins`;
  const inv = (await api(a, 'POST', `${p}/invitations`, { bearer: second.bearer, body: { email: 'invitee@school.example', role: 'admin' } })).body.data;
  const res = await api(a, 'POST', `${p}/${second.id}/disable`, { bearer: first.bearer });
  t.equal(res.status, 200);
  assertError(t, await accept(tokenOf(inv.acceptUrl)), 410, 'admin_invitation_revoked');
  // second's request was already past authentication when first disabled them: it must not leave the school without an owner
  const stale = { adminId: second.id, email: second.email, role: 'owner' as const };
  const deps = { clock, admins: a.app.services.admins, mailEnabled: false, baseUrl: a.url };
  await t.rejects(disableAdmin(a.app.sql, deps, { orgId: school.orgId, id: first.id, by: stale }), { code: 'last_owner' });
  t.equal((await api(a, 'GET', `${p}/${first.id}`, { bearer: first.bearer })).body.data.status, 'ACTIVE');

  // two owners disabling each other at once: one wins, the school keeps an owner
  const third = await adminOf(school, 'third@school.example', 'owner');
  const [x, y] = await Promise.all([
    api(a, 'POST', `${p}/${third.id}/disable`, { bearer: first.bearer }),
    api(b, 'POST', `${p}/${first.id}/disable`, { bearer: third.bearer }),
  ]);
  t.equal([x, y].filter((r) => r.status === 200).length, 1, `one wins: ${x.status} ${y.status}`);
  const loser = x.status === 200 ? y : x;
  t.ok(['last_owner', 'admin_session_revoked'].includes(loser.body.error.code), loser.body.error.code);
  const owners = await a.app.sql`select 1 from admins where org_id = ${school.orgId} and role = 'owner' and disabled_at is null`;
  t.equal(owners.length, 1);
});

t.test('an owner enables a disabled admin and changes roles: at once on every node; never the last owner; in the log', async (t) => {
  const school = await createTenant(a);
  const first = await adminOf(school, 'head@school.example', 'owner');
  const deputy = await adminOf(school, 'deputy@school.example', 'admin');
  const p = `/orgs/${school.orgId}/admins`;
  const onB = await signIn(school, deputy.email, PASSWORD, b);
  // an admin may not invite; both nodes cache the deputy's sessions as an admin's
  assertError(t, await api(a, 'POST', `${p}/invitations`, { bearer: deputy.bearer, body: { email: 'x@school.example', role: 'admin' } }), 403, 'owner_required');
  assertError(t, await api(b, 'POST', `${p}/invitations`, { bearer: onB, body: { email: 'x@school.example', role: 'admin' } }), 403, 'owner_required');
  assertError(t, await api(a, 'PATCH', `${p}/${first.id}`, { bearer: deputy.bearer, body: { role: 'admin' } }), 403, 'owner_required');
  assertError(t, await api(a, 'POST', `${p}/${first.id}/enable`, { bearer: deputy.bearer }), 403, 'owner_required');

  const promoted = await api(a, 'PATCH', `${p}/${deputy.id}`, { bearer: first.bearer, body: { role: 'owner' } });
  t.equal(promoted.status, 200, JSON.stringify(promoted.body));
  t.match(promoted.body.data, { id: deputy.id, role: 'owner', status: 'ACTIVE' });
  // the open sessions, on both nodes, are owners' now (no new sign-in)
  const invited = await api(b, 'POST', `${p}/invitations`, { bearer: onB, body: { email: 'x@school.example', role: 'admin' } });
  t.equal(invited.status, 201, 'the deputy\'s session on node b invites at once');
  t.equal((await api(a, 'POST', `${p}/invitations`, { bearer: deputy.bearer, body: { email: 'y@school.example', role: 'admin' } })).status, 201, 'and on node a');
  t.equal((await api(a, 'PATCH', `${p}/${deputy.id}`, { bearer: first.bearer, body: { role: 'owner' } })).body.data.role, 'owner', 'the same role again changes nothing');

  // the head steps down while the deputy is an owner; the deputy, now the last owner, cannot step down
  t.equal((await api(a, 'PATCH', `${p}/${first.id}`, { bearer: first.bearer, body: { role: 'admin' } })).body.data.role, 'admin');
  assertError(t, await api(a, 'POST', `${p}/invitations`, { bearer: first.bearer, body: { email: 'z@school.example', role: 'admin' } }), 403, 'owner_required');
  assertError(t, await api(b, 'PATCH', `${p}/${deputy.id}`, { bearer: onB, body: { role: 'admin' } }), 409, 'last_owner');

  // disable and enable: sign-in refused, then allowed; the old sessions stay revoked
  t.equal((await api(a, 'POST', `${p}/${first.id}/disable`, { bearer: deputy.bearer })).status, 200);
  assertError(t, await api(a, 'POST', '/auth/sign-in', { body: { orgId: school.orgId, email: first.email, password: PASSWORD } }), 403, 'admin_disabled');
  const enabled = await api(b, 'POST', `${p}/${first.id}/enable`, { bearer: onB });
  t.equal(enabled.status, 200, JSON.stringify(enabled.body));
  t.match(enabled.body.data, { id: first.id, status: 'ACTIVE', disabledAt: null, role: 'admin' });
  assertError(t, await api(a, 'GET', `/orgs/${school.orgId}`, { bearer: first.bearer }), 401, 'admin_session_revoked');
  t.equal((await api(a, 'GET', `/orgs/${school.orgId}`, { bearer: await signIn(school, first.email) })).status, 200, 'they sign in again');
  t.equal((await api(a, 'POST', `${p}/${first.id}/enable`, { bearer: deputy.bearer })).status, 200, 'enabling an active admin changes nothing');

  // a request let in while `first` was an owner, deciding after they were made an admin: refused
  const stale = { adminId: first.id, email: first.email, role: 'owner' as const };
  const deps = { clock, admins: a.app.services.admins, mailEnabled: false, baseUrl: a.url };
  const third = await adminOf(school, 'third@school.example', 'admin');
  await t.rejects(disableAdmin(a.app.sql, deps, { orgId: school.orgId, id: third.id, by: stale }), { code: 'admin_session_revoked' });
  await t.rejects(changeAdminRole(a.app.sql, deps, { orgId: school.orgId, id: third.id, role: 'owner', by: stale }), { code: 'admin_session_revoked' });
  t.equal((await api(a, 'POST', `${p}/${third.id}/disable`, { bearer: deputy.bearer })).status, 200);
  await t.rejects(enableAdmin(a.app.sql, deps, { orgId: school.orgId, id: third.id, by: stale }), { code: 'admin_session_revoked' });
  t.equal((await api(a, 'GET', `${p}/${third.id}`, { bearer: deputy.bearer })).body.data.status, 'DISABLED', 'the stale request changed nothing');

  for (const body of [{}, { role: 'teacher' }, { role: 'owner', email: 'x@y.z' }]) assertError(t, await api(a, 'PATCH', `${p}/${first.id}`, { bearer: deputy.bearer, body }), 400, 'validation_failed');
  assertError(t, await api(a, 'PATCH', `${p}/adm_00000000000000000000000000`, { bearer: deputy.bearer, body: { role: 'owner' } }), 404, 'admin_not_found');
  assertError(t, await api(a, 'POST', `/orgs/${tenant.orgId}/admins/${admin.id}/enable`, { bearer: deputy.bearer }), 403, 'org_mismatch');

  const log = (await api(a, 'GET', `/orgs/${school.orgId}/audit-log?action=admin.*`, { bearer: deputy.bearer })).body.data as any[];
  t.same(
    log.filter((e) => ['admin.role_changed', 'admin.enabled'].includes(e.action)).map((e) => [e.action, e.details.email, e.details.from ?? null, e.details.to ?? null]).reverse(),
    [
      ['admin.role_changed', deputy.email, 'admin', 'owner'],
      ['admin.role_changed', first.email, 'owner', 'admin'],
      ['admin.enabled', first.email, null, null],
    ],
    'each change once, oldest first here',
  );
});

t.test('another organization\'s owner sees and changes none of these admins', async (t) => {
  const other = await createTenant(a);
  const theirs = await adminOf(other, 'owner@other.example', 'owner');
  const inv = (await invite(owner, { email: 'isolated@school.example', role: 'admin' })).body.data;
  assertError(t, await api(a, 'GET', base, { bearer: theirs.bearer }), 403, 'org_mismatch');
  assertError(t, await api(a, 'GET', `${base}/invitations`, { bearer: theirs.bearer }), 403, 'org_mismatch');
  assertError(t, await api(a, 'POST', `${base}/invitations`, { bearer: theirs.bearer, body: { email: 'x@other.example', role: 'admin' } }), 403, 'org_mismatch');
  assertError(t, await api(a, 'DELETE', `${base}/invitations/${inv.id}`, { bearer: theirs.bearer }), 403, 'org_mismatch');
  assertError(t, await api(a, 'POST', `${base}/${admin.id}/disable`, { bearer: theirs.bearer }), 403, 'org_mismatch');
  const mine = `/orgs/${other.orgId}/admins`;
  assertError(t, await api(a, 'DELETE', `${mine}/invitations/${inv.id}`, { bearer: theirs.bearer }), 404, 'admin_invitation_not_found');
  assertError(t, await api(a, 'POST', `${mine}/${admin.id}/disable`, { bearer: theirs.bearer }), 404, 'admin_not_found');
  assertError(t, await api(a, 'GET', `${mine}/${admin.id}`, { bearer: theirs.bearer }), 404, 'admin_not_found');
  const listed = (await api(a, 'GET', mine, { bearer: theirs.bearer })).body.data as any[];
  t.same(listed.map((m) => m.id), [theirs.id]);
  t.same((await api(a, 'GET', `${mine}/invitations`, { bearer: theirs.bearer })).body.data, []);
  t.equal((await api(a, 'GET', `/orgs/${tenant.orgId}`, { bearer: admin.bearer })).status, 200, 'our admin still works');
  assertError(t, await api(a, 'GET', base), 401, 'admin_session_missing');
  assertError(t, await api(a, 'GET', base, { key: tenant.key }), 401, 'auth_malformed');
});

t.test('with AULA_SMTP_URL the link is emailed and not in the answer', async (t) => {
  const c = await startTestNode(t, { clock, databaseUrl, redisPrefix, overrides: { AULA_SMTP_URL: 'smtp://127.0.0.1:9', AULA_MAIL_FROM: 'Aula <no-reply@aula.test>' } });
  await c.app.mailer.stop(); // nothing to send to: the row stays queued for the test to read
  const res = await invite(owner, { email: 'mailed@school.example', role: 'owner' }, c);
  t.equal(res.status, 201, JSON.stringify(res.body));
  t.match(res.body.data, { email: 'mailed@school.example', role: 'owner', emailed: true });
  t.notOk('acceptUrl' in res.body.data, 'the owner is not shown the link');
  const [mail] = await c.app.sql<{ subject: string; textBody: string }[]>`select subject, text_body from email_outbox where to_address = 'mailed@school.example'`;
  t.ok(mail, 'an email is queued');
  t.match(mail!.subject, /invited to run .* on Aula/);
  const link = /(\S+\/console\/accept\?token=aula_inv_\S+)/.exec(mail!.textBody)?.[1];
  t.ok(link, mail!.textBody);
  t.match(mail!.textBody, new RegExp(owner.email));
  const ok = await accept(tokenOf(link!));
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.equal(ok.body.data.admin.role, 'owner');
});

t.test('a link expires 24 hours after it was made (the manual clock)', async (t) => {
  const inv = (await invite(owner, { email: 'late@school.example', role: 'admin' })).body.data;
  const token = tokenOf(inv.acceptUrl);
  clock.advance(INVITATION_TTL_MS - 1000);
  t.equal((await api(a, 'POST', '/auth/invitation', { body: { token } })).status, 200, 'still valid a second before');
  clock.advance(1000);
  const d = assertError(t, await accept(token), 410, 'admin_invitation_expired');
  t.equal(d.expiredAt, inv.expiresAt);
  assertError(t, await api(b, 'POST', '/auth/invitation', { body: { token } }), 410, 'admin_invitation_expired');
  const fresh = await signIn(tenant, owner.email);
  const expired = (await api(a, 'GET', `${base}/invitations?status=EXPIRED`, { bearer: fresh })).body.data as any[];
  t.ok(expired.some((i) => i.id === inv.id));
  t.equal((await a.app.sql`select 1 from admins where email = 'late@school.example'`).length, 0, 'nobody was made');
});
