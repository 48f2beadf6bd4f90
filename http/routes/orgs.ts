import { z } from 'zod';
import { PLAN_NAMES, PLANS } from '../../src/core/plans.ts';
import { getOrg, SHORT_NAME, SHORT_NAME_RULE, updateOrg, type Org } from '../../src/services/orgs.ts';
import { attendanceRules } from '../schemas/attendance.ts';
import { allowedOrigins, mobileApps, mobileAppsPatch } from '../schemas/orgs.ts';
import { route } from '../route.ts';
import type { App } from '../../src/services/app.ts';
import { inTx } from '../../src/platform/db/tx.ts';
import { recordAudit } from '../../src/services/audit-log.ts';
import { auditActorOf } from './audit-log.ts';

const tag = 'Organization (admin)';
const orgParams = z.object({ orgId: z.string().min(1).max(64) });
const organization = z.object({
  id: z.string(),
  name: z.string(),
  plan: z.enum(PLAN_NAMES as [string, ...string[]]),
  features: z.array(z.string()),
  allowedOrigins: z.array(z.string()).describe('Origins whose pages may frame the room (docs/sdk.md).'),
  attendanceRules: attendanceRules.describe('How attendance is reconciled (docs/attendance.md): the rules in force.'),
  mobileApps: mobileApps.describe('The organization\'s own apps: the join page offers one only when it is configured, and /.well-known/assetlinks.json and apple-app-site-association vouch for it.'),
  recordingRetentionDays: z.number().int().describe('Recordings older than this many days are deleted, with recording.deleted (docs/recordings.md); default 365.'),
  aiNotes: z.boolean().describe('Whether READY recordings get a transcript and lecture notes (docs/ai-notes.md); on by default, used only when the plan has `ai_notes`.'),
  language: z.string().describe('The language classes are taught in (ISO 639-1, default `en`): what transcription listens for.'),
  shortName: z.string().nullable().describe('What its admins may type at sign-in instead of the id; null until set.'),
  aiNotesUnavailable: z.string().nullable().describe('Why recordings get no transcript and notes now (the plan, the switch, a language the server\'s engine cannot do, no engine installed); null when they do.'),
});
const present = (app: App, org: Org) => ({
  id: org.id,
  name: org.name,
  plan: org.plan,
  features: [...PLANS[org.plan].features],
  allowedOrigins: org.allowedOrigins,
  attendanceRules: org.attendanceRules,
  mobileApps: org.mobileApps,
  recordingRetentionDays: org.recordingRetentionDays,
  aiNotes: org.aiNotes,
  language: org.language,
  shortName: org.shortName,
  aiNotesUnavailable: app.services.recordingNotes.unavailable(org),
});

/** The admin surface, `/orgs/:orgId/...`: signed-in owners and admins of that organization only. */
export const orgRoutes = [
  route(
    { method: 'get', path: '/orgs/:orgId', tag, auth: 'admin', summary: 'The signed-in admin\'s organization: name, plan, plan features, allowed origins, attendance rules and mobile apps.', params: orgParams, response: organization },
    async ({ app, db, params }) => ({ data: present(app, await getOrg(db, params.orgId)) }),
  ),
  route(
    {
      method: 'patch',
      path: '/orgs/:orgId',
      tag,
      auth: 'admin',
      summary: 'Rename the organization, set its allowed origins, its attendance rules or its mobile apps.',
      description:
        'allowedOrigins replaces the list: origins (scheme, host and optional port; http or https) whose pages may put the room in an iframe with the embedding SDK, at most 50. The room page answers with `Content-Security-Policy: frame-ancestors` built from it; running nodes pick a change up at once. attendanceRules changes the rules given and keeps the others; lateness and shares apply to reports not yet final, the settle window to meetings created after the change. mobileApps sets the organization\'s Android app (package name and the SHA-256 fingerprints of its signing certificates) and iOS app (team id and bundle id): a platform given replaces the one set, null removes it, one left out stays. The join page offers "Open in the app" on a phone of that platform only for a configured app, and the well-known documents vouch for it; a change shows on running nodes at once.',
      params: orgParams,
      body: z.strictObject({
        name: z.string().trim().min(1).max(200).optional(),
        allowedOrigins: allowedOrigins.optional(),
        attendanceRules: attendanceRules.partial().optional(),
        mobileApps: mobileAppsPatch.optional(),
        recordingRetentionDays: z.number().int().min(1).max(3650).optional(),
        aiNotes: z.boolean().optional(),
        language: z.string().regex(/^[a-z]{2}$/, 'an ISO 639-1 code: two lowercase letters, like en').optional(),
        shortName: z.string().regex(SHORT_NAME, SHORT_NAME_RULE).nullable().optional().describe('What admins may type at sign-in instead of the id; unique (409 slug_taken); null removes it.'),
      }),
      response: organization,
      errors: ['not_found', 'slug_taken'],
    },
    async ({ app, db, req, admin, apiKey, params, body }) => {
      const org = await inTx(db, async (tx) => {
        const updated = await updateOrg(tx, app.clock, params.orgId, body);
        const changed = Object.keys(body).filter((k) => body[k as keyof typeof body] !== undefined);
        if (changed.length) {
          await recordAudit(tx, app.clock.now(), { orgId: params.orgId, actor: auditActorOf({ admin, apiKey }), action: 'organization.updated', target: { type: 'organization', id: params.orgId }, details: { changed }, requestId: req.requestId });
        }
        return updated;
      });
      if (body.allowedOrigins || body.mobileApps) app.services.orgOrigins.changed(db, org.id);
      return { data: present(app, org) };
    },
  ),
];
