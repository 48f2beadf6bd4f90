import { iso } from '../../core/clock.ts';
import type { Db } from '../../platform/db/index.ts';
import { newId } from '../../platform/ids.ts';

/** What happened, told to every active owner and admin of an organization. */
export interface OrgNotice {
  orgId: string;
  /** Dotted, stable, for clients to branch on: e.g. `webhook.endpoint_disabled`. */
  kind: string;
  /** One line: the in-app title, and the email subject unless `email` says otherwise. */
  title: string;
  /** The in-app text (plain text), and the email text unless `email` says otherwise. */
  body: string;
  /** Machine-readable details for the console (ids, reasons); JSON. */
  data: Record<string, unknown>;
  /** When it happened, ms since the epoch: the notifications' and emails' time (never the wall clock). */
  at: number;
  /** The email, when it should say more than the in-app notice (plain text). */
  email?: { subject: string; text: string };
}

export interface NoticeRecipient {
  adminId: string;
  email: string;
  notificationId: string;
  emailId: string;
}

const SUBJECT_MAX = 200;

/** A header-safe subject: one line, at most 200 characters. */
function subjectLine(s: string): string {
  const one = s.replace(/[\r\n\t]+/g, ' ').replace(/\s{2,}/g, ' ').trim();
  return one.length > SUBJECT_MAX ? `${one.slice(0, SUBJECT_MAX - 1)}…` : one;
}

/**
 * Tells every owner and admin of the organization who is not disabled: one `notifications` row (in-app)
 * and one `email_outbox` row (sent later by the Mailer) each. Runs in the caller's transaction, so the
 * notice commits with what it reports, or not at all. Admins of other organizations and disabled
 * admins get nothing; an organization without an active owner or admin gets nothing (the caller
 * may log that: the answer is empty).
 */
export async function notifyOrgAdmins(tx: Db, notice: OrgNotice): Promise<NoticeRecipient[]> {
  const admins = await tx<{ id: string; email: string }[]>`select id, email from admins
    where org_id = ${notice.orgId} and role in ('owner', 'admin') and disabled_at is null order by id`;
  if (admins.length === 0) return [];
  const at = iso(notice.at);
  const subject = subjectLine(notice.email?.subject ?? notice.title);
  const text = notice.email?.text ?? notice.body;
  const recipients = admins.map((m) => ({ adminId: m.id, email: m.email, notificationId: newId('ntf', notice.at), emailId: newId('eml', notice.at) }));
  const notifications = recipients.map((r) => ({
    id: r.notificationId,
    orgId: notice.orgId,
    adminId: r.adminId,
    kind: notice.kind,
    title: notice.title,
    body: notice.body,
    data: tx.json(notice.data as never),
    createdAt: at,
  }));
  const emails = recipients.map((r) => ({
    id: r.emailId,
    orgId: notice.orgId,
    toAddress: r.email,
    subject,
    textBody: text,
    createdAt: at,
    nextAttemptAt: at,
  }));
  await tx`insert into notifications ${tx(notifications)}`;
  await tx`insert into email_outbox ${tx(emails)}`;
  return recipients;
}

export type EndpointDisabledReason = 'FAILING' | 'GONE';

export interface EndpointDisabledNotice {
  orgId: string;
  endpointId: string;
  url: string;
  reason: EndpointDisabledReason;
  /** The first failure since the last success (ms, or the endpoint row's Date); null if unknown. */
  failingSince: number | Date | null;
  /** When the endpoint was disabled, ms. */
  at: number;
  /** The public base URL, to write the API addresses in full; relative (`/api/v1/...`) without it. */
  baseUrl?: string;
}

/** `2026-01-05 09:00 UTC`: unambiguous, and readable in an email. */
const when = (ms: number): string => `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

function failedFor(ms: number): string {
  const hours = Math.floor(ms / 3_600_000);
  if (hours >= 48) return `${Math.floor(hours / 24)} days`;
  if (hours >= 1) return `${hours} hour${hours === 1 ? '' : 's'}`;
  return 'less than an hour';
}

/**
 * The spec's "webhook endpoint ACTIVE → disabled: owners and admins notified (in-app and email)".
 * Called by the endpoint's actor in the transaction that disables it. `data` is
 * `{ endpointId, url, reason, failingSince, disabledAt }`.
 */
export async function notifyEndpointDisabled(tx: Db, n: EndpointDisabledNotice): Promise<NoticeRecipient[]> {
  const since = n.failingSince === null ? null : typeof n.failingSince === 'number' ? n.failingSince : n.failingSince.getTime();
  const [org] = await tx<{ name: string }[]>`select name from organizations where id = ${n.orgId}`;
  const orgName = org?.name ?? n.orgId;
  const api = `${(n.baseUrl ?? '').replace(/\/+$/, '')}/api/v1`;
  const endpointPath = `${api}/orgs/${n.orgId}/webhooks/${n.endpointId}`;

  const why =
    n.reason === 'GONE'
      ? `The receiver answered 410 Gone, which says it no longer accepts deliveries, so the endpoint was disabled on ${when(n.at)}.`
      : since !== null
        ? `Every delivery to it has failed since ${when(since)} (${failedFor(n.at - since)}), so the endpoint was disabled on ${when(n.at)}.`
        : `Every delivery to it failed for 3 days, so the endpoint was disabled on ${when(n.at)}.`;
  const title = `Webhook endpoint disabled: ${n.url}`;
  const body =
    `${why} Its queued retries were stopped and new events are not sent to it. ` +
    `Fix the receiver, set the endpoint's status to ACTIVE again, then redeliver the events it missed from its delivery log.`;

  const lines = [
    'Hello,',
    '',
    `Aula disabled a webhook endpoint of ${orgName}.`,
    '',
    `  Endpoint:     ${n.url}`,
    `  Endpoint id:  ${n.endpointId}`,
    `  Disabled at:  ${when(n.at)}`,
    n.reason === 'GONE'
      ? '  Reason:       the receiver answered 410 Gone'
      : `  Reason:       every delivery failed${since !== null ? `, since ${when(since)}` : ''}`,
    '',
    why,
    'Its queued retries were stopped. While it stays disabled, new events are not sent to it; they are',
    'kept in its delivery log, so nothing is lost.',
    '',
    'To resume deliveries:',
    '',
    `1. Make sure ${n.url} answers 2xx within 10 seconds.`,
    '2. Re-enable the endpoint: set its status to ACTIVE in the console, or',
    `   PATCH ${endpointPath}  with the body {"status":"ACTIVE"}`,
    `   (or PATCH ${api}/public/webhooks/${n.endpointId} with an API key that has webhooks:write).`,
    '3. Redeliver what it missed: list its delivery log',
    `   GET ${endpointPath}/deliveries`,
    '   and redeliver each event it missed:',
    `   POST ${api}/orgs/${n.orgId}/webhooks/deliveries/<deliveryId>/redeliver`,
    '',
    `You receive this email as an owner or admin of ${orgName} (${n.orgId}).`,
    '',
  ];
  return notifyOrgAdmins(tx, {
    orgId: n.orgId,
    kind: 'webhook.endpoint_disabled',
    title,
    body,
    data: { endpointId: n.endpointId, url: n.url, reason: n.reason, failingSince: since === null ? null : iso(since), disabledAt: iso(n.at) },
    at: n.at,
    email: { subject: title, text: lines.join('\n') },
  });
}
