/**
 * What every delivery path shares (scheduled sends, retries, test events, redeliveries): the event
 * envelope's exact bytes, the endpoint's live secrets, one signed attempt, and its row in the log.
 */
import { iso, type Clock } from '../../core/clock.ts';
import type { Sealer } from '../../platform/crypto.ts';
import type { Db } from '../../platform/db/index.ts';
import { newId } from '../../platform/ids.ts';
import { deliver, type DeliverOptions, type DeliveryResult } from './sender.ts';
import { signatureHeaders } from './signing.ts';

/** The actor that owns a webhook endpoint's state (ACTIVE / failing / DISABLED, rotation overlap). */
export const webhookActor = (endpointId: string) => `webhook:${endpointId}`;

/** An outbox row as the envelope needs it. */
export interface EventRow {
  id: string;
  orgId: string;
  type: string;
  data: unknown;
  createdAt: Date | string;
}

/** The spec's envelope `{ id, type, createdAt, organizationId, data }`, serialized once per attempt from the stored row. */
export function eventBody(e: EventRow): string {
  const createdAt = e.createdAt instanceof Date ? e.createdAt.toISOString() : new Date(e.createdAt).toISOString();
  return JSON.stringify({ id: e.id, type: e.type, createdAt, organizationId: e.orgId, data: e.data });
}

/** The secret columns of a webhook_endpoints row. */
export interface SecretColumns {
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretExpiresAt: Date | string | null;
}

/** The secrets to sign with now, newest first: the current one, and the previous one during the 24 h after a rotation. */
export function liveSecrets(row: SecretColumns, sealer: Sealer, now: number): string[] {
  const current = sealer.open(row.secretSealed);
  if (!current) throw new Error('a webhook secret does not open with this server\'s key (AULA_SECRET_KEY changed?)');
  const out = [current.toString('utf8')];
  if (row.previousSecretSealed && row.previousSecretExpiresAt && new Date(row.previousSecretExpiresAt).getTime() > now) {
    const previous = sealer.open(row.previousSecretSealed);
    if (previous) out.push(previous.toString('utf8'));
  }
  return out;
}

/** What made a delivery attempt, and how it went: the delivery log's `trigger` and `status`. */
export const DELIVERY_TRIGGERS = ['EVENT', 'TEST', 'REDELIVERY'] as const;
export const DELIVERY_STATUSES = ['SUCCEEDED', 'FAILED', 'SKIPPED'] as const;
export type AttemptTrigger = (typeof DELIVERY_TRIGGERS)[number];
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface AttemptInput {
  url: string;
  event: EventRow;
  secrets: string[];
  clock: Clock;
  allowPrivate: boolean;
  /** Test seams of `deliver`: name resolution and extra trust anchors. */
  lookup?: DeliverOptions['lookup'];
  ca?: DeliverOptions['ca'];
  timeoutMs?: number;
  /** A kept `vettedAgent` (made with the same allowPrivate, lookup and ca), to reuse its connections. */
  agent?: DeliverOptions['agent'];
}

/** One signed POST of an event, signed with a fresh timestamp. Never throws. */
export function sendAttempt(a: AttemptInput): Promise<DeliveryResult> {
  const body = eventBody(a.event);
  const headers = signatureHeaders({ eventId: a.event.id, timestamp: Math.floor(a.clock.now() / 1000), body, secrets: a.secrets });
  return deliver({
    url: a.url,
    body,
    headers,
    allowPrivate: a.allowPrivate,
    clock: a.clock,
    ...(a.lookup ? { lookup: a.lookup } : {}),
    ...(a.ca ? { ca: a.ca } : {}),
    ...(a.timeoutMs ? { timeoutMs: a.timeoutMs } : {}),
    ...(a.agent ? { agent: a.agent } : {}),
  });
}

/** A `webhook_attempts` row, one attempt in the delivery log, as postgres.js reads it. */
export interface AttemptRow {
  id: string;
  endpointId: string;
  orgId: string;
  messageId: string | null;
  eventId: string;
  eventType: string;
  attempt: number;
  trigger: AttemptTrigger;
  status: DeliveryStatus;
  statusCode: number | null;
  durationMs: number | null;
  responseBody: string | null;
  errorKind: string | null;
  errorMessage: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** An attempt as it is written: the row, its timestamps as ISO text. */
export type AttemptValues = Omit<AttemptRow, 'nextAttemptAt' | 'createdAt'> & { nextAttemptAt: string | null; createdAt: string };

/** What happened in one attempt, before it is a row (attemptRow makes its row). */
export type AttemptRecord = Pick<AttemptRow, 'endpointId' | 'orgId' | 'messageId' | 'eventId' | 'eventType' | 'attempt' | 'trigger'> & {
  /** When the attempt started (or, for SKIPPED, when the event found the endpoint disabled). */
  at: number;
  result: DeliveryResult | 'SKIPPED';
  nextAttemptAt?: number | null;
};

/** One row of the delivery log, with a new id. */
export function attemptRow(r: AttemptRecord): AttemptValues {
  const res = r.result === 'SKIPPED' ? null : r.result;
  return {
    id: newId('whd', r.at),
    endpointId: r.endpointId,
    orgId: r.orgId,
    messageId: r.messageId,
    eventId: r.eventId,
    eventType: r.eventType,
    attempt: r.attempt,
    trigger: r.trigger,
    status: res === null ? 'SKIPPED' : res.ok ? 'SUCCEEDED' : 'FAILED',
    statusCode: res?.status ?? null,
    durationMs: res === null ? null : Math.round(res.durationMs),
    responseBody: res?.responseBody ?? null,
    errorKind: res?.error?.kind ?? (res === null ? 'disabled' : null),
    errorMessage: res?.error?.message ?? (res === null ? 'the endpoint was disabled when the event happened' : null),
    nextAttemptAt: r.nextAttemptAt == null ? null : iso(r.nextAttemptAt),
    createdAt: iso(r.at),
  };
}

/** Writes one row of the delivery log; returns its id (the `deliveryId` of the API). */
export async function insertAttempt(db: Db, r: AttemptRecord): Promise<string> {
  const row = attemptRow(r);
  await db`insert into webhook_attempts ${db(row as never)}`;
  return row.id;
}
