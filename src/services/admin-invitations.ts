import { iso, type Clock } from '../core/clock.ts';
import { AppError } from '../core/errors.ts';
import { sha256 } from '../platform/crypto.ts';
import type { Db } from '../platform/db/index.ts';
import { inTx } from '../platform/db/tx.ts';
import { newId, randomToken, ulid } from '../platform/ids.ts';
import { MAX_PASSWORD_LENGTH, passwordProblem } from '../platform/passwords.ts';
import { normalizeEmail, type AdminRole, type Admins, type SignInResult } from './admins.ts';
import { auditAdminDisabled, recordAudit, type AuditActor } from './audit-log.ts';
import { decodeCursor, encodeCursor, type PageQuery } from './common.ts';

/**
 * The organization's admins as the console manages them (docs/console-api.md): listed by owners and
 * admins; invited by email and disabled by owners only. An invitation is a one-time link valid 24 hours
 * whose token (256 bits) is stored only as SHA-256; accepting it sets the password (the rules of
 * `aula admins add`), creates the admin and opens their session.
 */

export const INVITATION_TTL_MS = 24 * 60 * 60_000;
const TOKEN_PREFIX = 'aula_inv_';
const TOKEN_FORMAT = /^aula_inv_[A-Za-z0-9_-]{43}$/;

export interface AdminListing {
  id: string;
  email: string;
  role: AdminRole;
  status: 'ACTIVE' | 'DISABLED';
  createdAt: string;
  disabledAt: string | null;
  /** When they last signed in (their newest session), null if never. */
  lastSignInAt: string | null;
  /** The owner whose invitation they accepted; null for those the operator's CLI added. */
  invitedBy: { id: string; email: string } | null;
}

export type InvitationStatus = 'PENDING' | 'ACCEPTED' | 'REVOKED' | 'EXPIRED';
export const INVITATION_STATUSES = ['PENDING', 'ACCEPTED', 'REVOKED', 'EXPIRED'] as const;

export interface AdminInvitation {
  id: string;
  email: string;
  role: AdminRole;
  status: InvitationStatus;
  createdAt: string;
  expiresAt: string;
  invitedBy: { id: string; email: string };
  acceptedAt: string | null;
  /** The admin the invitation made. */
  adminId: string | null;
  revokedAt: string | null;
  /** Whether an email with the link was queued (AULA_SMTP_URL set); otherwise the inviting owner passes the link on. */
  emailed: boolean;
}

export interface InvitationDeps {
  clock: Clock;
  admins: Admins;
  /** Whether the node sends email (AULA_SMTP_URL). */
  mailEnabled: boolean;
  /** The public base URL (the accept page's address); relative without it. */
  baseUrl: string;
}

/** Who acts: a signed-in owner or admin. */
export interface Acting {
  adminId: string;
  email: string;
  role: AdminRole;
}

const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

const actorOf = (by: Acting): AuditActor => ({ type: 'admin', id: by.adminId, email: by.email });

interface AdminRow {
  id: string;
  email: string;
  role: AdminRole;
  createdAt: Date;
  disabledAt: Date | null;
  lastSignInAt: Date | null;
  invitedBy: string | null;
  invitedByEmail: string | null;
}

const toListing = (r: AdminRow): AdminListing => ({
  id: r.id,
  email: r.email,
  role: r.role,
  status: r.disabledAt ? 'DISABLED' : 'ACTIVE',
  createdAt: r.createdAt.toISOString(),
  disabledAt: isoOrNull(r.disabledAt),
  lastSignInAt: isoOrNull(r.lastSignInAt),
  invitedBy: r.invitedBy ? { id: r.invitedBy, email: r.invitedByEmail ?? '' } : null,
});

const ADMIN_SELECT = (db: Db) => db`select a.id, a.email, a.role, a.created_at, a.disabled_at, a.invited_by, i.email as invited_by_email,
    (select max(s.created_at) from admin_sessions s where s.admin_id = a.id) as last_sign_in_at
  from admins a left join admins i on i.id = a.invited_by`;

/** The organization's owners and admins, oldest first, disabled ones included. */
export async function listAdmins(db: Db, orgId: string, q: PageQuery): Promise<{ items: AdminListing[]; nextCursor: string | null }> {
  const after = decodeCursor(q.cursor, 'id');
  const rows = await db<AdminRow[]>`${ADMIN_SELECT(db)} where a.org_id = ${orgId} ${after ? db`and a.id > ${after[0]!}` : db``}
    order by a.id limit ${q.limit + 1}`;
  const items = rows.slice(0, q.limit).map(toListing);
  return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
}

export async function getAdminListing(db: Db, orgId: string, id: string): Promise<AdminListing> {
  const [row] = await db<AdminRow[]>`${ADMIN_SELECT(db)} where a.org_id = ${orgId} and a.id = ${id}`;
  if (!row) throw new AppError('admin_not_found');
  return toListing(row);
}

interface InvitationRow {
  id: string;
  orgId: string;
  email: string;
  role: AdminRole;
  invitedBy: string;
  invitedByEmail: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  acceptedAdminId: string | null;
  revokedAt: Date | null;
  emailed: boolean;
}

const statusOf = (r: InvitationRow, now: number): InvitationStatus =>
  r.acceptedAt ? 'ACCEPTED' : r.revokedAt ? 'REVOKED' : r.expiresAt.getTime() <= now ? 'EXPIRED' : 'PENDING';

const toInvitation = (r: InvitationRow, now: number): AdminInvitation => ({
  id: r.id,
  email: r.email,
  role: r.role,
  status: statusOf(r, now),
  createdAt: r.createdAt.toISOString(),
  expiresAt: r.expiresAt.toISOString(),
  invitedBy: { id: r.invitedBy, email: r.invitedByEmail },
  acceptedAt: isoOrNull(r.acceptedAt),
  adminId: r.acceptedAdminId,
  revokedAt: isoOrNull(r.revokedAt),
  emailed: r.emailed,
});

const INVITATION_SELECT = (db: Db) => db`select v.id, v.org_id, v.email, v.role, v.invited_by, i.email as invited_by_email, v.created_at, v.expires_at,
    v.accepted_at, v.accepted_admin_id, v.revoked_at, v.emailed
  from admin_invitations v join admins i on i.id = v.invited_by`;

/** The organization's invitations, newest first; by status (PENDING: neither accepted, revoked nor expired). */
export async function listInvitations(db: Db, now: number, orgId: string, q: PageQuery & { status?: InvitationStatus | undefined }): Promise<{ items: AdminInvitation[]; nextCursor: string | null }> {
  const after = decodeCursor(q.cursor, 'id');
  const at = iso(now);
  const status =
    q.status === 'PENDING'
      ? db`and v.accepted_at is null and v.revoked_at is null and v.expires_at > ${at}`
      : q.status === 'ACCEPTED'
        ? db`and v.accepted_at is not null`
        : q.status === 'REVOKED'
          ? db`and v.revoked_at is not null and v.accepted_at is null`
          : q.status === 'EXPIRED'
            ? db`and v.accepted_at is null and v.revoked_at is null and v.expires_at <= ${at}`
            : db``;
  const rows = await db<InvitationRow[]>`${INVITATION_SELECT(db)} where v.org_id = ${orgId} ${status} ${after ? db`and v.id < ${after[0]!}` : db``}
    order by v.id desc limit ${q.limit + 1}`;
  const items = rows.slice(0, q.limit).map((r) => toInvitation(r, now));
  return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
}

async function getInvitation(db: Db, orgId: string, id: string, lock = false): Promise<InvitationRow> {
  const [row] = await db<InvitationRow[]>`${INVITATION_SELECT(db)} where v.org_id = ${orgId} and v.id = ${id} ${lock ? db`for update of v` : db``}`;
  if (!row) throw new AppError('admin_invitation_not_found');
  return row;
}

const acceptUrlOf = (baseUrl: string, token: string) => `${baseUrl.replace(/\/+$/, '')}/console/accept?token=${token}`;

function invitationEmail(e: { orgName: string; orgId: string; inviter: string; role: AdminRole; url: string; expiresAt: number }): { subject: string; text: string } {
  const until = `${new Date(e.expiresAt).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return {
    subject: `You are invited to run ${e.orgName} on Aula`.replace(/[\r\n\t]+/g, ' ').slice(0, 200),
    text: [
      'Hello,',
      '',
      `${e.inviter} invited you to be ${e.role === 'owner' ? 'an owner' : 'an admin'} of ${e.orgName} (${e.orgId}) in the Aula console.`,
      '',
      'Open this link to choose your password and sign in:',
      '',
      `  ${e.url}`,
      '',
      `The link works once, until ${until}. If you did not expect it, ignore this email.`,
      '',
    ].join('\n'),
  };
}

/**
 * An owner invites `email` as an owner or admin. A pending invitation to the same email is revoked
 * (the new link replaces it); an email that is already an owner or admin of the organization (even a
 * disabled one) answers admin_exists. With AULA_SMTP_URL the link is emailed; without, the answer
 * carries it for the owner to pass on. The token is in this answer only.
 */
export async function inviteAdmin(
  db: Db,
  deps: InvitationDeps,
  input: { orgId: string; email: string; role: AdminRole; by: Acting; requestId?: string | null },
): Promise<{ invitation: AdminInvitation; acceptUrl: string }> {
  if (input.by.role !== 'owner') throw new AppError('owner_required');
  const email = normalizeEmail(input.email);
  const now = deps.clock.now();
  const token = TOKEN_PREFIX + randomToken(32);
  const id = `ainv_${ulid(now)}`;
  const expiresAt = now + INVITATION_TTL_MS;
  const url = acceptUrlOf(deps.baseUrl, token);
  const emailed = deps.mailEnabled;
  return inTx(db, async (tx) => {
    const [org] = await tx<{ name: string }[]>`select name from organizations where id = ${input.orgId}`;
    const [existing] = await tx<{ id: string }[]>`select id from admins where org_id = ${input.orgId} and email = ${email}`;
    if (existing) throw new AppError('admin_exists', { message: `${email} is already an owner or admin of this organization.`, details: { email, adminId: existing.id } });
    const replaced = await tx<{ id: string }[]>`update admin_invitations set revoked_at = ${iso(now)}
      where org_id = ${input.orgId} and email = ${email} and accepted_at is null and revoked_at is null returning id`;
    await tx`insert into admin_invitations (id, org_id, email, role, token_hash, invited_by, created_at, expires_at, emailed)
      values (${id}, ${input.orgId}, ${email}, ${input.role}, ${sha256(token)}, ${input.by.adminId}, ${iso(now)}, ${iso(expiresAt)}, ${emailed})`;
    if (emailed) {
      const mail = invitationEmail({ orgName: org?.name ?? input.orgId, orgId: input.orgId, inviter: input.by.email, role: input.role, url, expiresAt });
      await tx`insert into email_outbox (id, org_id, to_address, subject, text_body, created_at, next_attempt_at)
        values (${newId('eml', now)}, ${input.orgId}, ${email}, ${mail.subject}, ${mail.text}, ${iso(now)}, ${iso(now)})`;
    }
    await recordAudit(tx, now, {
      orgId: input.orgId,
      actor: actorOf(input.by),
      action: 'admin.invited',
      target: { type: 'admin', id: null },
      details: { invitationId: id, email, role: input.role, emailed, replaced: replaced.map((r) => r.id) },
      requestId: input.requestId ?? null,
    });
    return { invitation: toInvitation(await getInvitation(tx, input.orgId, id), now), acceptUrl: url };
  });
}

/** Revokes a pending invitation (owners only); a revoked or expired one answers unchanged, an accepted one admin_invitation_used. */
export async function revokeInvitation(db: Db, deps: InvitationDeps, input: { orgId: string; id: string; by: Acting; requestId?: string | null }): Promise<AdminInvitation> {
  if (input.by.role !== 'owner') throw new AppError('owner_required');
  const now = deps.clock.now();
  return inTx(db, async (tx) => {
    const row = await getInvitation(tx, input.orgId, input.id, true);
    const status = statusOf(row, now);
    if (status === 'ACCEPTED') throw new AppError('admin_invitation_used', { message: 'This invitation was already accepted: disable the admin instead.', details: { adminId: row.acceptedAdminId } });
    if (status !== 'PENDING') return toInvitation(row, now);
    await tx`update admin_invitations set revoked_at = ${iso(now)} where id = ${row.id}`;
    await recordAudit(tx, now, {
      orgId: input.orgId,
      actor: actorOf(input.by),
      action: 'admin.invitation_revoked',
      target: { type: 'admin', id: null },
      details: { invitationId: row.id, email: row.email, role: row.role },
      requestId: input.requestId ?? null,
    });
    return toInvitation({ ...row, revokedAt: new Date(now) }, now);
  });
}

interface TokenRow {
  id: string;
  orgId: string;
  email: string;
  role: AdminRole;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
  orgName: string;
}

function assertUsable(row: TokenRow | undefined, now: number): TokenRow {
  if (!row) throw new AppError('admin_invitation_invalid');
  if (row.acceptedAt) throw new AppError('admin_invitation_used');
  if (row.revokedAt) throw new AppError('admin_invitation_revoked');
  if (row.expiresAt.getTime() <= now) throw new AppError('admin_invitation_expired', { details: { expiredAt: row.expiresAt.toISOString() } });
  return row;
}

const findByToken = (db: Db, token: string, lock: boolean) =>
  db<TokenRow[]>`select v.id, v.org_id, v.email, v.role, v.expires_at, v.accepted_at, v.revoked_at, o.name as org_name
    from admin_invitations v join organizations o on o.id = v.org_id where v.token_hash = ${sha256(token)} ${lock ? db`for update of v` : db``}`;

/** What the accept page shows before the password is set: whose invitation, to which organization, as what. */
export async function peekInvitation(db: Db, deps: Pick<InvitationDeps, 'clock'>, token: string): Promise<{ email: string; role: AdminRole; orgId: string; orgName: string; expiresAt: string }> {
  if (!TOKEN_FORMAT.test(token)) throw new AppError('admin_invitation_invalid');
  const [found] = await findByToken(db, token, false);
  const row = assertUsable(found, deps.clock.now());
  return { email: row.email, role: row.role, orgId: row.orgId, orgName: row.orgName, expiresAt: row.expiresAt.toISOString() };
}

/**
 * Accepts an invitation once: the password (the rules of `aula admins add`, against the email and the
 * organization's name) is set, the admin is created and signed in. Expired, used and revoked links
 * answer their own codes; the token is checked before the password, so a dead link says so first.
 */
export async function acceptInvitation(db: Db, deps: InvitationDeps, input: { token: string; password: string }): Promise<SignInResult> {
  if (!TOKEN_FORMAT.test(input.token)) throw new AppError('admin_invitation_invalid');
  const [found] = await findByToken(db, input.token, false);
  const first = assertUsable(found, deps.clock.now());
  const problem = input.password.length > MAX_PASSWORD_LENGTH * 4 ? 'the password is too long' : passwordProblem(input.password, [first.email, first.orgName]);
  if (problem) {
    throw new AppError('validation_failed', { message: `The password cannot be used: ${problem}.`, details: { fields: [{ field: 'password', in: 'body', code: 'weak_password', message: problem }] } });
  }
  return inTx(db, async (tx) => {
    const now = deps.clock.now();
    const [locked] = await findByToken(tx, input.token, true);
    const row = assertUsable(locked, now);
    const made = await deps.admins.create(tx, { orgId: row.orgId, email: row.email, role: row.role, password: input.password });
    await tx`update admins set invited_by = (select invited_by from admin_invitations where id = ${row.id}) where id = ${made.id}`;
    await tx`update admin_invitations set accepted_at = ${iso(now)}, accepted_admin_id = ${made.id} where id = ${row.id}`;
    await recordAudit(tx, now, {
      orgId: row.orgId,
      actor: { type: 'admin', id: made.id, email: made.email },
      action: 'admin.joined',
      target: { type: 'admin', id: made.id },
      details: { invitationId: row.id, email: made.email, role: made.role },
    });
    return deps.admins.openSession(tx, { id: made.id, orgId: made.orgId, email: made.email, role: made.role });
  });
}

interface LockedAdmin {
  id: string;
  email: string;
  role: AdminRole;
  disabledAt: Date | null;
}

/**
 * The organization's owners and admins, locked until the transaction ends, so that changes owners make
 * of one another at once (disable, enable, a role) are decided one after the other.
 */
const lockAdmins = (tx: Db, orgId: string) => tx<LockedAdmin[]>`select id, email, role, disabled_at from admins where org_id = ${orgId} order by id for update`;

/** Whether `target` is the organization's last active owner: never disabled or made an admin. */
const lastActiveOwner = (all: LockedAdmin[], target: LockedAdmin) =>
  target.role === 'owner' && !target.disabledAt && !all.some((a) => a.id !== target.id && a.role === 'owner' && !a.disabledAt);

/**
 * The acting owner as the locked rows say now: their request was let in before it waited for the lock,
 * and meanwhile they may have been disabled or made an admin (admin_session_revoked).
 */
function assertStillOwner(all: LockedAdmin[], by: Acting): void {
  const actor = all.find((a) => a.id === by.adminId);
  if (!actor || actor.disabledAt || actor.role !== 'owner') throw new AppError('admin_session_revoked');
}

/**
 * An owner disables an owner or admin: sign-in refused, every session revoked on every node once this
 * commits, their pending invitations revoked. Not yourself; not the organization's last active owner
 * (the organization's admins are locked, so two owners disabling each other at once leave one). Disabling
 * a disabled admin answers them unchanged.
 */
export async function disableAdmin(db: Db, deps: InvitationDeps, input: { orgId: string; id: string; by: Acting; requestId?: string | null }): Promise<AdminListing> {
  if (input.by.role !== 'owner') throw new AppError('owner_required');
  if (input.id === input.by.adminId) throw new AppError('cannot_disable_self');
  const now = deps.clock.now();
  return inTx(db, async (tx) => {
    const all = await lockAdmins(tx, input.orgId);
    const target = all.find((a) => a.id === input.id);
    if (!target) throw new AppError('admin_not_found');
    if (target.disabledAt) return getAdminListing(tx, input.orgId, target.id);
    if (lastActiveOwner(all, target)) throw new AppError('last_owner');
    assertStillOwner(all, input.by);
    await deps.admins.disableIn(tx, target.id);
    await tx`update admin_invitations set revoked_at = ${iso(now)} where invited_by = ${target.id} and accepted_at is null and revoked_at is null`;
    await auditAdminDisabled(tx, now, { orgId: input.orgId, actor: actorOf(input.by), adminId: target.id, email: target.email, requestId: input.requestId ?? null });
    return getAdminListing(tx, input.orgId, target.id);
  });
}

/**
 * Enables a disabled owner or admin (owners only): they may sign in again (their sessions were revoked
 * when they were disabled and stay so). Enabling an active admin answers them unchanged. Audit: admin.enabled.
 */
export async function enableAdmin(db: Db, deps: InvitationDeps, input: { orgId: string; id: string; by: Acting; requestId?: string | null }): Promise<AdminListing> {
  if (input.by.role !== 'owner') throw new AppError('owner_required');
  const now = deps.clock.now();
  return inTx(db, async (tx) => {
    const all = await lockAdmins(tx, input.orgId);
    const target = all.find((a) => a.id === input.id);
    if (!target) throw new AppError('admin_not_found');
    if (!target.disabledAt) return getAdminListing(tx, input.orgId, target.id);
    assertStillOwner(all, input.by);
    await tx`update admins set disabled_at = null, updated_at = ${iso(now)} where id = ${target.id}`;
    await recordAudit(tx, now, { orgId: input.orgId, actor: actorOf(input.by), action: 'admin.enabled', target: { type: 'admin', id: target.id }, details: { email: target.email }, requestId: input.requestId ?? null });
    return getAdminListing(tx, input.orgId, target.id);
  });
}

/**
 * Makes an admin an owner or an owner an admin (owners only), effective at once on every node: their
 * open sessions are read again with the new role. Not the organization's last active owner
 * (last_owner). The same role answers them unchanged. Audit: admin.role_changed.
 */
export async function changeAdminRole(db: Db, deps: InvitationDeps, input: { orgId: string; id: string; role: AdminRole; by: Acting; requestId?: string | null }): Promise<AdminListing> {
  if (input.by.role !== 'owner') throw new AppError('owner_required');
  const now = deps.clock.now();
  return inTx(db, async (tx) => {
    const all = await lockAdmins(tx, input.orgId);
    const target = all.find((a) => a.id === input.id);
    if (!target) throw new AppError('admin_not_found');
    if (target.role === input.role) return getAdminListing(tx, input.orgId, target.id);
    assertStillOwner(all, input.by);
    if (lastActiveOwner(all, target)) throw new AppError('last_owner');
    await tx`update admins set role = ${input.role}, updated_at = ${iso(now)} where id = ${target.id}`;
    await deps.admins.rereadSessionsIn(tx, target.id);
    await recordAudit(tx, now, { orgId: input.orgId, actor: actorOf(input.by), action: 'admin.role_changed', target: { type: 'admin', id: target.id }, details: { email: target.email, from: target.role, to: input.role }, requestId: input.requestId ?? null });
    return getAdminListing(tx, input.orgId, target.id);
  });
}
