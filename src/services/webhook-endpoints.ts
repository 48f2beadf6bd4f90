import { iso, type Clock } from '../core/clock.ts';
import type { Cluster } from '../platform/cluster/cluster.ts';
import type { RateLimits } from '../platform/cluster/rate-limit.ts';
import type { Sealer } from '../platform/crypto.ts';
import type { Db } from '../platform/db/index.ts';
import { afterCommit, inTx } from '../platform/db/tx.ts';
import { AppError, errorCatalog, type ErrorCode } from '../core/errors.ts';
import { newId } from '../platform/ids.ts';
import type { Logger } from '../platform/logger.ts';
import { attemptRow, eventBody, liveSecrets, sendAttempt, webhookActor, type AttemptRow, type AttemptTrigger, type AttemptValues, type DeliveryStatus, type EventRow } from './webhooks/envelope.ts';
import { newSecret } from './webhooks/signing.ts';
import { checkTargetUrl } from './webhooks/targets.ts';
import { decodeCursor, encodeCursor, ts, type PageQuery } from './common.ts';
import { EVENT_TYPES, type EventType } from '../platform/outbox.ts';

/** Endpoints per organization, disabled ones included (spec, Webhook management rule 2). */
export const WEBHOOK_ENDPOINT_LIMIT = 20;
/** How long the previous secret keeps signing after a rotation (rule 4). */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60_000;
/** Test events per endpoint per minute (spec, Limits; the unit is ours: per endpoint). */
export const TEST_EVENTS_PER_MINUTE = 10;
/** How far back `GET /public/events` reaches. */
export const EVENT_FEED_WINDOW_MS = 30 * 24 * 60 * 60_000;
export const WILDCARD = '*';
export const TEST_EVENT_MESSAGE = 'This is a test event from Aula: your endpoint is reachable and can verify our signatures.';
/**
 * What the log row of a test or a redelivery says from before its send until its outcome is recorded,
 * and for good if the process dies in between: it is never sent again, so this is its last word.
 */
export const UNRECORDED = {
  kind: 'interrupted',
  message: 'The outcome of this attempt was not recorded (the server stopped before it could): the event was sent at most once, possibly not at all, and is not sent again.',
} as const;

export const ENDPOINT_STATUSES = ['ACTIVE', 'DISABLED'] as const;
export const DISABLED_REASONS = ['MANUAL', 'FAILING', 'GONE'] as const;
/** Types the events feed serves: the catalog without the test events, which belong to one endpoint. */
export const FEED_EVENT_TYPES = EVENT_TYPES.filter((t) => t !== 'webhook.test') as [string, ...string[]];

export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];
export type FeedEventType = (typeof FEED_EVENT_TYPES)[number];

/** An endpoint as the API creates it: `events` are catalog types (duplicates dropped), or the wildcard alone. */
export interface WebhookCreate {
  url: string;
  description?: string | undefined;
  events?: string[] | undefined;
}

/** The fields an endpoint update changes (at least one); a null description clears it. */
export interface WebhookUpdate {
  url?: string | undefined;
  description?: string | null | undefined;
  events?: string[] | undefined;
  status?: EndpointStatus | undefined;
}

/** An endpoint as the API shows it (its secret only on creation and rotation). */
export interface WebhookRecord {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  status: EndpointStatus;
  disabledReason: (typeof DISABLED_REASONS)[number] | null;
  disabledAt: string | null;
  failingSince: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryListQuery extends PageQuery {
  status?: DeliveryStatus | undefined;
  eventType?: EventType | undefined;
}

/** One delivery attempt as the API shows it. */
export interface DeliveryRecord {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  trigger: AttemptTrigger;
  status: DeliveryStatus;
  statusCode: number | null;
  durationMs: number | null;
  responseBody: string | null;
  error: { kind: string; message: string } | null;
  nextAttemptAt: string | null;
  createdAt: string;
}

/** An event as delivered and as the events feed serves it. */
export interface EventEnvelope {
  id: string;
  type: string;
  createdAt: string;
  organizationId: string;
  data: Record<string, unknown>;
}

/** The events feed's page: the events after the event id `after`. */
export interface EventFeedQuery {
  after?: string | undefined;
  type?: FeedEventType | undefined;
  limit: number;
}

/** A `webhook_endpoints` row. */
export interface EndpointRow {
  id: string;
  orgId: string;
  url: string;
  description: string | null;
  events: string[];
  status: EndpointStatus;
  disabledReason: (typeof DISABLED_REASONS)[number] | null;
  disabledAt: Date | null;
  failingSince: Date | null;
  secretSealed: Buffer;
  previousSecretSealed: Buffer | null;
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const toWebhookRecord = (e: EndpointRow, now: number): WebhookRecord => ({
  id: e.id,
  url: e.url,
  description: e.description,
  events: e.events,
  status: e.status,
  disabledReason: e.disabledReason,
  disabledAt: ts(e.disabledAt),
  failingSince: ts(e.failingSince),
  previousSecretExpiresAt:
    e.previousSecretSealed && e.previousSecretExpiresAt && e.previousSecretExpiresAt.getTime() > now ? e.previousSecretExpiresAt.toISOString() : null,
  createdAt: e.createdAt.toISOString(),
  updatedAt: e.updatedAt.toISOString(),
});

export const toDeliveryRecord = (a: AttemptRow): DeliveryRecord => ({
  id: a.id,
  endpointId: a.endpointId,
  eventId: a.eventId,
  eventType: a.eventType,
  attempt: a.attempt,
  trigger: a.trigger,
  status: a.status,
  statusCode: a.statusCode,
  durationMs: a.durationMs,
  responseBody: a.responseBody,
  error: a.errorKind ? { kind: a.errorKind, message: a.errorMessage ?? '' } : null,
  nextAttemptAt: ts(a.nextAttemptAt),
  createdAt: a.createdAt.toISOString(),
});

/**
 * How a test or a redelivery commits its two steps, the claim (its log row, written before the send) and
 * the outcome, each in a transaction of its own. The HTTP layer passes one that also keeps the request's
 * idempotent answer with each step (Idempotency.step), so a retry after a crash answers the last one.
 */
export type CommitStep = (work: (tx: Db) => Promise<AttemptRow>) => Promise<AttemptRow>;

/** The envelope exactly as it is sent: the bytes `eventBody` makes, parsed. */
const envelopeOf = (e: EventRow): EventEnvelope => JSON.parse(eventBody(e)) as EventEnvelope;

type ActorReply = { ok: true } | { ok: false; error?: { code?: string; message?: string; details?: Record<string, unknown> } };

export interface WebhookEndpointsOptions {
  clock: Clock;
  /** Seals secrets at rest (`tokens.data`). */
  sealer: Sealer;
  cluster: Cluster;
  rateLimits: RateLimits;
  /** `allowPrivateTargets(config)`: never true in production. */
  allowPrivate: boolean;
  log: Logger;
}

/**
 * Webhook endpoints as the management API sees them: CRUD, secrets, test events, the delivery log and
 * redeliveries, and the events feed. The endpoint's actor owns its status and timers, so enabling,
 * disabling, deleting and the end of a rotation overlap go through it; everything else is rows.
 */
export class WebhookEndpoints {
  readonly #clock: Clock;
  readonly #sealer: Sealer;
  readonly #cluster: Cluster;
  readonly #rateLimits: RateLimits;
  readonly #allowPrivate: boolean;
  readonly #log: Logger;

  constructor(opts: WebhookEndpointsOptions) {
    this.#clock = opts.clock;
    this.#sealer = opts.sealer;
    this.#cluster = opts.cluster;
    this.#rateLimits = opts.rateLimits;
    this.#allowPrivate = opts.allowPrivate;
    this.#log = opts.log;
  }

  async get(db: Db, orgId: string, id: string, forUpdate = false): Promise<EndpointRow> {
    const [row] = await db<EndpointRow[]>`select * from webhook_endpoints where org_id = ${orgId} and id = ${id} ${forUpdate ? db`for update` : db``}`;
    if (!row) throw new AppError('webhook_not_found', { details: { id } });
    return row;
  }

  /** Newest first. */
  async list(db: Db, orgId: string, q: PageQuery): Promise<{ items: EndpointRow[]; nextCursor: string | null }> {
    const after = decodeCursor(q.cursor, 'id');
    const rows = await db<EndpointRow[]>`select * from webhook_endpoints where org_id = ${orgId}
      ${after ? db`and id < ${after[0]!}` : db``}
      order by id desc limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit);
    return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
  }

  /**
   * Creates an ACTIVE endpoint with a new secret, returned only here. The organization row is locked
   * first, so concurrent creates count one after another and the 21st always gets `limit_reached`.
   */
  async create(pool: Db, orgId: string, input: WebhookCreate): Promise<{ endpoint: EndpointRow; secret: string }> {
    // Resolved before the transaction: no row lock is held while DNS answers.
    const url = await this.#checkUrl(input.url);
    return inTx(pool, async (db) => {
      await db`select id from organizations where id = ${orgId} for update`;
      const [row] = await db<{ count: number }[]>`select count(*)::int as count from webhook_endpoints where org_id = ${orgId}`;
      const count = row!.count;
      if (count >= WEBHOOK_ENDPOINT_LIMIT) {
        throw new AppError('limit_reached', {
          message: `An organization has at most ${WEBHOOK_ENDPOINT_LIMIT} webhook endpoints, disabled ones included; delete one first.`,
          details: { limit: WEBHOOK_ENDPOINT_LIMIT, count, resource: 'webhook_endpoints' },
        });
      }
      const secret = newSecret();
      const at = this.#clock.now();
      const [endpoint] = await db<EndpointRow[]>`insert into webhook_endpoints (id, org_id, url, description, events, status, secret_sealed, created_at, updated_at)
        values (${newId('whe', at)}, ${orgId}, ${url}, ${input.description ?? null}, ${input.events ?? [WILDCARD]}, 'ACTIVE',
          ${this.#sealer.seal(secret)}, ${iso(at)}, ${iso(at)})
        returning *`;
      return { endpoint: endpoint!, secret };
    });
  }

  /**
   * Changes url, description and events in a transaction, then, when `status` is given, asks the
   * endpoint's actor to enable or disable it (it owns the status). Repeating an update is harmless.
   */
  async update(pool: Db, orgId: string, id: string, patch: WebhookUpdate): Promise<EndpointRow> {
    await this.get(pool, orgId, id);
    const url = patch.url === undefined ? undefined : await this.#checkUrl(patch.url);
    if (url !== undefined || patch.description !== undefined || patch.events !== undefined) {
      await inTx(pool, async (db) => {
        const e = await this.get(db, orgId, id, true);
        const next = { url: url ?? e.url, description: patch.description === undefined ? e.description : patch.description, events: patch.events ?? e.events };
        if (next.url === e.url && next.description === e.description && next.events.join('\n') === e.events.join('\n')) return;
        await db`update webhook_endpoints set url = ${next.url}, description = ${next.description}, events = ${next.events},
          updated_at = ${iso(this.#clock.now())} where id = ${e.id}`;
      });
    }
    if (patch.status) await this.#command(orgId, id, { type: patch.status === 'ACTIVE' ? 'ENABLE' : 'DISABLE' });
    return this.get(pool, orgId, id);
  }

  /** Deleted by its actor (which stops its timers and deletes the row, its queue and its delivery log). */
  async remove(db: Db, orgId: string, id: string): Promise<void> {
    await this.get(db, orgId, id);
    await this.#command(orgId, id, { type: 'DELETE' });
  }

  /**
   * A new secret; the one it replaces keeps signing for 24 hours (a second rotation within that time
   * keeps only the secret it replaces). The actor is told afterwards, so it erases the previous secret
   * when the overlap ends; signing stops at `previous_secret_expires_at` whether or not it has.
   */
  rotateSecret(pool: Db, orgId: string, id: string): Promise<{ endpoint: EndpointRow; secret: string }> {
    return inTx(pool, async (db) => {
      const e = await this.get(db, orgId, id, true);
      const secret = newSecret();
      const at = this.#clock.now();
      const expiresAt = at + ROTATION_OVERLAP_MS;
      const [endpoint] = await db<EndpointRow[]>`update webhook_endpoints set secret_sealed = ${this.#sealer.seal(secret)},
          previous_secret_sealed = secret_sealed, previous_secret_expires_at = ${iso(expiresAt)}, updated_at = ${iso(at)}
        where id = ${e.id} returning *`;
      // After the commit, and never failing the request: the caller must get the secret now in effect.
      afterCommit(db, () =>
        this.#cluster.ask<ActorReply>(webhookActor(id), { type: 'ROTATED', expiresAt }).then(
          (reply) => {
            if (!reply.ok) this.#log.warn({ endpointId: id, reply }, 'webhook actor refused ROTATED');
          },
          (err: unknown) => this.#log.warn({ err, endpointId: id }, 'webhook actor not told of a rotation; the old secret still stops signing on time'),
        ),
      );
      return { endpoint: endpoint!, secret };
    });
  }

  /**
   * Sends a `webhook.test` event at most once, now, with no retries, whatever the endpoint's status, and
   * records it in the delivery log (trigger TEST). The endpoint's failure state is not touched.
   */
  async sendTest(db: Db, orgId: string, id: string, commit: CommitStep = (work) => inTx(db, work)): Promise<AttemptRow> {
    const e = await this.get(db, orgId, id);
    const limit = await this.#rateLimits.consume('webhook-test', e.id, TEST_EVENTS_PER_MINUTE);
    if (!limit.allowed) {
      throw new AppError('rate_limited', {
        message: `At most ${TEST_EVENTS_PER_MINUTE} test events per endpoint per minute.`,
        details: { limit: TEST_EVENTS_PER_MINUTE, retryAfterSeconds: limit.retryAfterSeconds },
        headers: { 'Retry-After': String(limit.retryAfterSeconds) },
      });
    }
    const at = this.#clock.now();
    const event: EventRow = { id: newId('evt', at), orgId, type: 'webhook.test', data: { message: TEST_EVENT_MESSAGE, endpointId: e.id }, createdAt: new Date(at) };
    const claimed = await commit(async (tx) => {
      // Written as already dispatched, so it is never fanned out to the organization's other endpoints.
      await tx`insert into outbox (id, org_id, type, data, created_at, dispatched_at)
        values (${event.id}, ${orgId}, ${event.type}, ${tx.json(event.data as never)}, ${iso(at)}, ${iso(at)})`;
      return this.#claim(tx, e, event, 'TEST', at);
    });
    return this.#sendClaimed(e, event, claimed, commit);
  }

  /** The log of one endpoint, newest first. */
  async deliveries(db: Db, orgId: string, endpointId: string, q: DeliveryListQuery): Promise<{ items: AttemptRow[]; nextCursor: string | null }> {
    const e = await this.get(db, orgId, endpointId);
    const after = decodeCursor(q.cursor, 'id');
    const rows = await db<AttemptRow[]>`select * from webhook_attempts where endpoint_id = ${e.id}
      ${q.status ? db`and status = ${q.status}` : db``}
      ${q.eventType ? db`and event_type = ${q.eventType}` : db``}
      ${after ? db`and id < ${after[0]!}` : db``}
      order by id desc limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit);
    return { items, nextCursor: rows.length > q.limit ? encodeCursor([items.at(-1)!.id]) : null };
  }

  async delivery(db: Db, orgId: string, deliveryId: string): Promise<{ attempt: AttemptRow; payload: EventEnvelope | null }> {
    const attempt = await this.#attempt(db, orgId, deliveryId);
    const event = await this.#event(db, orgId, attempt.eventId);
    return { attempt, payload: event ? envelopeOf(event) : null };
  }

  /** Sends the delivery's event again, same id, at most once, now; recorded as a new delivery (trigger REDELIVERY). */
  async redeliver(db: Db, orgId: string, deliveryId: string, commit: CommitStep = (work) => inTx(db, work)): Promise<AttemptRow> {
    const attempt = await this.#attempt(db, orgId, deliveryId);
    const event = await this.#event(db, orgId, attempt.eventId);
    if (!event) {
      throw new AppError('delivery_not_found', { message: 'The event of this delivery is no longer kept, so it cannot be sent again.', details: { id: deliveryId, eventId: attempt.eventId } });
    }
    const e = await this.get(db, orgId, attempt.endpointId);
    const claimed = await commit((tx) => this.#claim(tx, e, event, 'REDELIVERY', this.#clock.now()));
    return this.#sendClaimed(e, event, claimed, commit);
  }

  /** The organization's events of the last 30 days, oldest first, as delivered (test events excluded). */
  async events(db: Db, orgId: string, q: EventFeedQuery): Promise<{ items: EventEnvelope[]; nextCursor: string | null }> {
    const since = iso(this.#clock.now() - EVENT_FEED_WINDOW_MS);
    const rows = await db<EventRow[]>`select id, org_id, type, data, created_at from outbox
      where org_id = ${orgId} and type <> 'webhook.test' and created_at >= ${since}
      ${q.type ? db`and type = ${q.type}` : db``}
      ${q.after ? db`and id > ${q.after}` : db``}
      order by id limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit);
    return { items: items.map(envelopeOf), nextCursor: rows.length > q.limit ? items.at(-1)!.id : null };
  }

  /** The attempt's log row before its send: it says UNRECORDED until `#sendClaimed` records the outcome. */
  async #claim(tx: Db, e: EndpointRow, event: EventRow, trigger: 'TEST' | 'REDELIVERY', at: number): Promise<AttemptRow> {
    const row: AttemptValues = {
      // a SKIPPED record's outcome columns are all empty, as they are until the send's outcome is known
      ...attemptRow({ endpointId: e.id, orgId: e.orgId, messageId: null, eventId: event.id, eventType: event.type, attempt: 1, trigger, at, result: 'SKIPPED' }),
      status: 'FAILED',
      errorKind: UNRECORDED.kind,
      errorMessage: UNRECORDED.message,
    };
    const [claimed] = await tx<AttemptRow[]>`insert into webhook_attempts ${tx(row as never)} returning *`;
    return claimed!;
  }

  /** The one send of a claimed attempt, and its outcome in the attempt's log row. */
  async #sendClaimed(e: EndpointRow, event: EventRow, claimed: AttemptRow, commit: CommitStep): Promise<AttemptRow> {
    const result = await sendAttempt({ url: e.url, event, secrets: liveSecrets(e, this.#sealer, this.#clock.now()), clock: this.#clock, allowPrivate: this.#allowPrivate });
    const outcome = attemptRow({ endpointId: e.id, orgId: e.orgId, messageId: null, eventId: event.id, eventType: event.type, attempt: 1, trigger: claimed.trigger, at: claimed.createdAt.getTime(), result });
    return commit(async (tx) => {
      const [row] = await tx<AttemptRow[]>`update webhook_attempts set status = ${outcome.status}, status_code = ${outcome.statusCode},
          duration_ms = ${outcome.durationMs}, response_body = ${outcome.responseBody},
          error_kind = ${outcome.errorKind}, error_message = ${outcome.errorMessage}
        where id = ${claimed.id} returning *`;
      // deleted with its endpoint while the send ran
      if (!row) throw new AppError('webhook_not_found', { details: { id: e.id } });
      return row;
    });
  }

  async #attempt(db: Db, orgId: string, deliveryId: string): Promise<AttemptRow> {
    const [row] = await db<AttemptRow[]>`select * from webhook_attempts where id = ${deliveryId} and org_id = ${orgId}`;
    if (!row) throw new AppError('delivery_not_found', { details: { id: deliveryId } });
    return row;
  }

  async #event(db: Db, orgId: string, eventId: string): Promise<EventRow | null> {
    const [row] = await db<EventRow[]>`select id, org_id, type, data, created_at from outbox where id = ${eventId} and org_id = ${orgId}`;
    return row ?? null;
  }

  /** The save-time SSRF check; a refusal is a validation error naming `url`. Returns the URL as it will be stored (normalised). */
  async #checkUrl(url: string): Promise<string> {
    const check = await checkTargetUrl(url, { allowPrivate: this.#allowPrivate });
    if (check.ok) return check.url.href;
    throw new AppError('validation_failed', {
      details: {
        fields: [
          {
            field: 'url',
            in: 'body',
            code: 'url_refused',
            message: check.message,
            reason: check.reason,
            ...(check.range ? { range: check.range } : {}),
          },
        ],
      },
    });
  }

  /** Asks the endpoint's actor; a refusal becomes its AppError, a vanished endpoint `webhook_not_found`. */
  async #command(orgId: string, id: string, event: Record<string, unknown>): Promise<void> {
    let reply: ActorReply;
    try {
      reply = await this.#cluster.ask<ActorReply>(webhookActor(id), event);
    } catch (err) {
      if (err instanceof AppError && err.code === 'not_found') throw new AppError('webhook_not_found', { details: { id }, cause: err });
      throw err;
    }
    if (!reply.ok) {
      if (reply.error?.code === 'not_found') throw new AppError('webhook_not_found', { details: { id } });
      const code = reply.error?.code && reply.error.code in errorCatalog ? (reply.error.code as ErrorCode) : 'invalid_state';
      throw new AppError(code, { ...(reply.error?.message ? { message: reply.error.message } : {}), details: { ...reply.error?.details, id } });
    }
  }
}
