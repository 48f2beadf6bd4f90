import type { ErrorCode } from './errors.ts';

/**
 * The effects a machine emits (XState `emit`) while it processes one event. The actor runtime collects
 * them with `actor.on('*', ...)`, persists the snapshot and the outbox rows and timers in one
 * transaction, then performs the sends, disconnects and the reply. Machines never touch the outside
 * world themselves.
 */

/** Where a `send` goes: one participant's connections, everyone in the room, the hosts and cohosts, or one waiting-room entry. */
export type SendTarget = { participantId: string } | { all: true } | { role: 'hosts' } | { queue: string };

export interface OutboxEffect<TType extends string = string, TData = Record<string, unknown>> {
  type: 'outbox';
  /** A catalog type (src/outbox.ts EVENT_TYPES). */
  eventType: TType;
  /** The webhook `data`, exactly as the spec shapes it. */
  data: TData;
  /** Emitted by the background worker (e.g. the plan cap): delivered even to organizations whose plan lacks webhooks. */
  background?: boolean;
}

/** Arm (or re-arm: same name replaces) a durable timer; the host later sends `{ type: 'TIMER', name, at }`. */
export interface TimerSetEffect {
  type: 'timer.set';
  name: string;
  dueAt: number;
}

/** Drop a timer if it is armed; cancelling one that is not is a no-op. */
export interface TimerCancelEffect {
  type: 'timer.cancel';
  name: string;
}

export interface SendEffect<TMessage extends { type: string } = { type: string }> {
  type: 'send';
  to: SendTarget;
  message: TMessage;
}

/**
 * Close a participant's connections with this code (e.g. `removed`, `meeting_ended`, `user_deactivated`,
 * `left`): every one of them, or only those listed (`replaced`: a newer socket of the same session took over).
 */
export interface DisconnectEffect {
  type: 'disconnect';
  participantId: string;
  code: DisconnectCode;
  connectionIds?: string[];
}
export type DisconnectCode = 'removed' | 'meeting_ended' | 'user_deactivated' | 'left' | 'replaced';

/** Codes a machine refuses with: the catalog's (src/errors.ts). */
export type ActorErrorCode = ErrorCode;

export interface Refusal {
  ok: false;
  error: { code: ActorErrorCode; message: string; details: Record<string, unknown> };
}

/** The answer to the request that carried the event; at most one per event. */
export interface ReplyEffect<TBody = { ok: true } | Refusal> {
  type: 'reply';
  body: TBody;
}

export const refusal = (code: ActorErrorCode, message: string, details: Record<string, unknown> = {}): ReplyEffect<Refusal> => ({
  type: 'reply',
  body: { ok: false, error: { code, message, details } },
});

/** Timestamps in payloads are ISO 8601 UTC, made from the `at` of events, never from a clock. */
export { iso } from './clock.ts';
