import { iso } from '../core/clock.ts';
import type { Db } from './db/index.ts';
import { afterCommit } from './db/tx.ts';
import { newId } from './ids.ts';
import type { Logger } from './logger.ts';

/** Event types of catalog v1. */
export const EVENT_TYPES = [
  'meeting.created', 'meeting.updated', 'meeting.started', 'meeting.ended', 'meeting.cancelled',
  'participant.joined', 'participant.left', 'participant.waiting', 'participant.admitted',
  'recording.started', 'recording.ready', 'recording.failed', 'recording.deleted',
  'transcript.ready', 'insights.ready', 'attendance.finalized',
  'user.created', 'user.updated', 'user.deactivated',
  'enrollment.created', 'enrollment.removed', 'class.created', 'class.updated',
  'poll.closed', 'question.answered', 'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The outbox: every event is a row written in the transaction that makes the change it reports, so the
 * event exists if and only if the change committed. One per node; its webhook delivery hears, through
 * `onCommit`, when this node committed events, and fans them out at once instead of at its next poll.
 */
export class Outbox {
  readonly #listeners = new Set<() => void>();
  readonly #log: Logger | null;

  /** `log`: each committed event gets an info line with its type and ids (never names or emails): the trail of joins, leaves, admissions, ends. */
  constructor(log?: Logger) {
    this.#log = log ?? null;
  }

  readonly #notify = (): void => {
    for (const l of this.#listeners) l();
  };

  /**
   * Writes an event in `db`'s transaction. `background`: emitted by the background worker (plan-cap
   * meeting.ended, transcript.ready, insights.ready), delivered whatever the plan.
   */
  async emit(db: Db, orgId: string, type: EventType, data: object, at: number, opts: { background?: boolean } = {}): Promise<string> {
    const id = newId('evt', at);
    await db`insert into outbox (id, org_id, type, data, created_at, background)
      values (${id}, ${orgId}, ${type}, ${db.json(data as never)}, ${iso(at)}, ${opts.background === true})`;
    afterCommit(db, this.#notify);
    if (this.#log?.isLevelEnabled('info')) {
      const d = data as { meetingId?: unknown; participantId?: unknown; queueId?: unknown; userId?: unknown; user?: { id?: unknown }; endpointId?: unknown };
      const ids = { meetingId: d.meetingId, participantId: d.participantId, queueId: d.queueId, userId: d.userId ?? d.user?.id, endpointId: d.endpointId };
      const log = this.#log;
      afterCommit(db, () => log.info({ eventId: id, type, orgId, ...ids }, 'event'));
    }
    return id;
  }

  /** Called after every commit (in this node) that wrote events; returns the unsubscribe. */
  onCommit(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
