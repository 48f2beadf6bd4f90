import { z } from 'zod';
import type { App } from '../../src/services/app.ts';
import { MAX_PASSWORD_LENGTH } from '../../src/platform/passwords.ts';
import { ADMIN_ROLES, ADMIN_SESSION_TTL_MS, type AdminPrincipal } from '../../src/services/admins.ts';
import {
  acceptInvitation,
  changeAdminRole,
  disableAdmin,
  enableAdmin,
  getAdminListing,
  INVITATION_STATUSES,
  INVITATION_TTL_MS,
  inviteAdmin,
  listAdmins,
  listInvitations,
  peekInvitation,
  revokeInvitation,
  type AdminInvitation,
  type AdminListing,
  type InvitationDeps,
} from '../../src/services/admin-invitations.ts';
import { pageQuery, schemaOf } from '../schemas/common.ts';
import { route } from '../route.ts';
import { sessionCookie } from './auth.ts';

const tag = 'Admins (admin)';
const orgParams = z.object({ orgId: z.string().min(1).max(64) });
const idParams = orgParams.extend({ id: z.string().min(1).max(64) });

/** Attempts per minute per client address at the accept routes (the token has 256 bits; this only bounds the work). */
export const ACCEPT_PER_IP_PER_MINUTE = 30;

const deps = (app: App): InvitationDeps => ({ clock: app.clock, admins: app.services.admins, mailEnabled: app.mailer.enabled, baseUrl: app.baseUrl });
const acting = (admin: AdminPrincipal | null) => ({ adminId: admin!.adminId, email: admin!.email, role: admin!.role });

const person = z.object({ id: z.string(), email: z.string() });

const adminListing = schemaOf<AdminListing>()(
  z.object({
    id: z.string(),
    email: z.string(),
    role: z.enum(ADMIN_ROLES),
    status: z.enum(['ACTIVE', 'DISABLED']),
    createdAt: z.string(),
    disabledAt: z.string().nullable(),
    lastSignInAt: z.string().nullable().describe('When they last signed in; null if never.'),
    invitedBy: person.nullable().describe('The owner whose invitation they accepted; null for those the operator added (`aula admins add`).'),
  }),
);

const invitation = schemaOf<AdminInvitation>()(
  z.object({
    id: z.string(),
    email: z.string(),
    role: z.enum(ADMIN_ROLES),
    status: z.enum(INVITATION_STATUSES).describe('PENDING until accepted, revoked (by an owner, by a newer invitation to the same email, or by disabling the owner who sent it) or expired (24 hours).'),
    createdAt: z.string(),
    expiresAt: z.string(),
    invitedBy: person,
    acceptedAt: z.string().nullable(),
    adminId: z.string().nullable().describe('The owner or admin the invitation made, once accepted.'),
    revokedAt: z.string().nullable(),
    emailed: z.boolean().describe('Whether the link was emailed (the server has AULA_SMTP_URL); otherwise the inviting owner was shown it to pass on.'),
  }),
);

const signedIn = z.object({
  admin: z.object({ id: z.string(), email: z.string(), role: z.enum(ADMIN_ROLES), orgId: z.string() }),
  sessionToken: z.string(),
  csrfToken: z.string(),
  expiresAt: z.string(),
});

const token = z.string().min(1).max(200).describe('The `token` of the invitation link.');

export const adminRoutes = [
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/admins',
      tag,
      auth: 'admin',
      summary: 'The organization\'s owners and admins, disabled ones included, oldest first.',
      description: 'Owners and admins.',
      params: orgParams,
      query: z.strictObject({ ...pageQuery }),
      response: z.array(adminListing),
      list: true,
    },
    async ({ db, params, query }) => {
      const page = await listAdmins(db, params.orgId, query);
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/admins/invitations',
      tag,
      auth: 'admin',
      summary: 'The organization\'s invitations of owners and admins, newest first; `status=PENDING` for those still open.',
      description: 'Owners and admins. Never the link.',
      params: orgParams,
      query: z.strictObject({ ...pageQuery, status: z.enum(INVITATION_STATUSES).optional() }),
      response: z.array(invitation),
      list: true,
    },
    async ({ app, db, params, query }) => {
      const page = await listInvitations(db, app.clock.now(), params.orgId, query);
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
  route(
    {
      method: 'post',
      path: '/orgs/:orgId/admins/invitations',
      tag,
      auth: 'admin',
      summary: 'Invite an owner or admin by email: a one-time link valid 24 hours to the console\'s accept page.',
      description: `Owners only (owner_required). With AULA_SMTP_URL set the link is emailed and not in the answer; without, the answer's \`acceptUrl\` is the link, shown only here, for the owner to pass on. A pending invitation to the same email is revoked (the new link replaces it); an email already an owner or admin of the organization, even a disabled one, answers admin_exists. The link lasts ${INVITATION_TTL_MS / 3_600_000} hours. Recorded in the audit log (admin.invited).`,
      params: orgParams,
      body: z.strictObject({ email: z.email().max(320), role: z.enum(ADMIN_ROLES) }),
      response: invitation.extend({ acceptUrl: z.string().optional().describe('The link, when the server sends no email (no AULA_SMTP_URL): in this answer only.') }),
      status: 201,
      errors: ['owner_required', 'admin_exists'],
    },
    async ({ app, db, req, admin, params, body }) => {
      const r = await inviteAdmin(db, deps(app), { orgId: params.orgId, email: body.email, role: body.role, by: acting(admin), requestId: req.requestId });
      return { status: 201, data: r.invitation.emailed ? r.invitation : { ...r.invitation, acceptUrl: r.acceptUrl }, headers: { 'Cache-Control': 'no-store' } };
    },
  ),
  route(
    {
      method: 'delete',
      path: '/orgs/:orgId/admins/invitations/:id',
      tag,
      auth: 'admin',
      summary: 'Revoke a pending invitation: its link answers admin_invitation_revoked from now on.',
      description: 'Owners only (owner_required). A revoked or expired invitation answers unchanged; an accepted one answers admin_invitation_used (disable the admin instead). Recorded in the audit log (admin.invitation_revoked).',
      params: idParams,
      response: invitation,
      errors: ['owner_required', 'admin_invitation_not_found', 'admin_invitation_used'],
    },
    async ({ app, db, req, admin, params }) => ({ data: await revokeInvitation(db, deps(app), { orgId: params.orgId, id: params.id, by: acting(admin), requestId: req.requestId }) }),
  ),
  route(
    {
      method: 'post',
      path: '/orgs/:orgId/admins/:id/disable',
      tag,
      auth: 'admin',
      summary: 'Disable an owner or admin: sign-in refused, and every session they hold refused at once on every node.',
      description: 'Owners only (owner_required). Not yourself (cannot_disable_self), not the organization\'s last active owner (last_owner). Their pending invitations are revoked. Disabling a disabled admin answers them unchanged. Recorded in the audit log (admin.disabled).',
      params: idParams,
      response: adminListing,
      errors: ['owner_required', 'admin_not_found', 'cannot_disable_self', 'last_owner'],
    },
    async ({ app, db, req, admin, params }) => ({ data: await disableAdmin(db, deps(app), { orgId: params.orgId, id: params.id, by: acting(admin), requestId: req.requestId }) }),
  ),
  route(
    {
      method: 'post',
      path: '/orgs/:orgId/admins/:id/enable',
      tag,
      auth: 'admin',
      summary: 'Enable a disabled owner or admin: they may sign in again.',
      description: 'Owners only (owner_required). The sessions revoked when they were disabled stay revoked. Enabling an active admin answers them unchanged. Recorded in the audit log (admin.enabled).',
      params: idParams,
      response: adminListing,
      errors: ['owner_required', 'admin_not_found'],
    },
    async ({ app, db, req, admin, params }) => ({ data: await enableAdmin(db, deps(app), { orgId: params.orgId, id: params.id, by: acting(admin), requestId: req.requestId }) }),
  ),
  route(
    {
      method: 'patch',
      path: '/orgs/:orgId/admins/:id',
      tag,
      auth: 'admin',
      summary: 'Make an admin an owner, or an owner an admin: effective at once, on every node.',
      description: 'Owners only (owner_required). Not the organization\'s last active owner (last_owner); an owner may make themselves an admin when another owner is active. The same role answers them unchanged. Recorded in the audit log (admin.role_changed, with from and to).',
      params: idParams,
      body: z.strictObject({ role: z.enum(ADMIN_ROLES) }),
      response: adminListing,
      errors: ['owner_required', 'admin_not_found', 'last_owner'],
    },
    async ({ app, db, req, admin, params, body }) => ({ data: await changeAdminRole(db, deps(app), { orgId: params.orgId, id: params.id, role: body.role, by: acting(admin), requestId: req.requestId }) }),
  ),
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/admins/:id',
      tag,
      auth: 'admin',
      summary: 'One owner or admin of the organization.',
      params: idParams,
      response: adminListing,
      errors: ['admin_not_found'],
    },
    async ({ db, params }) => ({ data: await getAdminListing(db, params.orgId, params.id) }),
  ),
  route(
    {
      method: 'post',
      path: '/auth/invitation',
      tag: 'Admin sessions',
      auth: 'none',
      ipLimit: { name: 'accept-invitation', perMinute: ACCEPT_PER_IP_PER_MINUTE },
      summary: 'What an invitation link is for (the accept page shows it): the email, the role and the organization.',
      description: 'Changes nothing. A link that cannot be used answers why: admin_invitation_invalid, admin_invitation_expired, admin_invitation_used, admin_invitation_revoked.',
      body: z.strictObject({ token }),
      response: z.object({ email: z.string(), role: z.enum(ADMIN_ROLES), orgId: z.string(), orgName: z.string(), expiresAt: z.string() }),
      errors: ['admin_invitation_invalid', 'admin_invitation_expired', 'admin_invitation_used', 'admin_invitation_revoked', 'rate_limited'],
    },
    async ({ app, db, body }) => ({ data: await peekInvitation(db, app, body.token), headers: { 'Cache-Control': 'no-store' } }),
  ),
  route(
    {
      method: 'post',
      path: '/auth/accept-invitation',
      tag: 'Admin sessions',
      auth: 'none',
      ipLimit: { name: 'accept-invitation', perMinute: ACCEPT_PER_IP_PER_MINUTE },
      summary: 'Accept an invitation: set the password, become an owner or admin, and be signed in.',
      description: `Once per link, within 24 hours. The password follows the rules of \`aula admins add\`: at least 12 characters and not easy to guess (against the email and the organization's name too); one that is not answers validation_failed naming \`password\`. Answers and sets the session as sign-in does (the aula_session cookie for ${ADMIN_SESSION_TTL_MS / 3_600_000} hours). Recorded in the audit log (admin.joined).`,
      body: z.strictObject({ token, password: z.string().min(1).max(MAX_PASSWORD_LENGTH) }),
      response: signedIn,
      errors: ['admin_invitation_invalid', 'admin_invitation_expired', 'admin_invitation_used', 'admin_invitation_revoked', 'admin_exists', 'rate_limited'],
    },
    async ({ app, db, body }) => {
      const s = await acceptInvitation(db, deps(app), body);
      return { data: s, headers: { 'Set-Cookie': sessionCookie(app, s.sessionToken, ADMIN_SESSION_TTL_MS / 1000), 'Cache-Control': 'no-store' } };
    },
  ),
];
