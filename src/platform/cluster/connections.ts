import type { Redis } from 'ioredis';
import type { Device } from '../../core/room.ts';
import type { Logger } from '../logger.ts';
import { RoomAccess, type RoomRole } from '../../core/room-access.ts';
import type { CloseReason } from '../../core/room-protocol.ts';
import { clusterKeys } from './placement.ts';

/** Who a room socket is: its session, as the token presented at the upgrade said. */
export interface ConnectionIdentity {
  /** `waiting`: a waiting-room page listening for its admission; `room`: a participant. */
  readonly kind: 'room' | 'waiting';
  readonly meetingId: string;
  readonly sessionId: string;
  readonly userId: string;
  readonly participantId: string;
  readonly role: RoomRole;
  readonly queueId: string | null;
  readonly device: Device;
}

/** A room socket as the rest of the server sees it: who it is, and the two things a transport can do. */
export interface RoomConnection extends ConnectionIdentity {
  readonly connectionId: string;
  readonly closed: boolean;
  /**
   * Consumers the server offered this socket (consumer-new) that it has not answered yet (consumer-ready
   * or consumer-close): those answers are the server's own step, so the gateway does not charge them to
   * the session's budget.
   */
  acksOwed: number;
  /** One text frame. */
  send(text: string): void;
  end(reason: CloseReason): void;
}

/** Who a message is for on this node. */
export type Audience = { participantId: string } | { all: true } | { role: 'hosts' } | { queue: string };

/**
 * Which room sockets are open on this node, found by participant, user, room or waiting-room entry;
 * and, in Redis, which connection ids each node holds (`conns:<nodeId>`), so that when a node
 * dies the others can report its connections gone (it cannot).
 */
export class Connections {
  readonly #redis: Redis | null;
  readonly #prefix: string;
  readonly #nodeId: string;
  readonly #log: Logger;
  readonly #byTopic = new Map<string, Set<RoomConnection>>();
  readonly #all = new Set<RoomConnection>();

  constructor(opts: { redis: Redis | null; prefix: string; nodeId: string; log: Logger }) {
    this.#redis = opts.redis;
    this.#prefix = opts.prefix;
    this.#nodeId = opts.nodeId;
    this.#log = opts.log;
  }

  get size(): number {
    return this.#all.size;
  }

  #key(nodeId = this.#nodeId): string {
    return `${this.#prefix}conns:${nodeId}`;
  }

  add(c: RoomConnection): void {
    this.#all.add(c);
    for (const t of topicsOf(c)) {
      let s = this.#byTopic.get(t);
      if (!s) this.#byTopic.set(t, (s = new Set()));
      s.add(c);
    }
    // Fire and forget, but never unhandled: a refusal (Redis gone, the node closing) must not end the process.
    if (c.kind === 'room') this.#redis?.hset(this.#key(), c.connectionId, JSON.stringify({ m: c.meetingId, p: c.participantId })).catch((err) => this.#lost(err, 'record'));
  }

  remove(c: RoomConnection): void {
    if (!this.#all.delete(c)) return;
    for (const t of topicsOf(c)) {
      const s = this.#byTopic.get(t);
      if (!s) continue;
      s.delete(c);
      if (!s.size) this.#byTopic.delete(t);
    }
    if (c.kind === 'room') this.#redis?.hdel(this.#key(), c.connectionId).catch((err) => this.#lost(err, 'forget'));
  }

  /** The open connections a message for `to` in this meeting goes to. */
  audience(meetingId: string, to: Audience): RoomConnection[] {
    const topic = 'all' in to ? `room:${meetingId}` : 'role' in to ? `hosts:${meetingId}` : 'queue' in to ? `q:${to.queue}` : `p:${to.participantId}`;
    return [...(this.#byTopic.get(topic) ?? [])].filter((c) => !c.closed);
  }

  ofParticipant(participantId: string): RoomConnection[] {
    return [...(this.#byTopic.get(`p:${participantId}`) ?? [])];
  }

  ofUser(userId: string): RoomConnection[] {
    return [...(this.#byTopic.get(`u:${userId}`) ?? [])];
  }

  /** Whether this node holds a participant's socket in this meeting. */
  hasRoom(meetingId: string): boolean {
    return this.#byTopic.has(`room:${meetingId}`);
  }

  all(): RoomConnection[] {
    return [...this.#all];
  }

  /**
   * Reports the connections of nodes whose registration expired (they cannot), each once: `report`
   * is called per connection and the entry removed. Idempotent in the meeting actor.
   */
  async sweepDeadNodes(report: (meetingId: string, participantId: string, connectionId: string) => Promise<void>): Promise<number> {
    const redis = this.#redis;
    if (!redis) return 0;
    const [sec, usec] = await redis.time();
    const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    const live = new Set(await redis.zrangebyscore(clusterKeys(this.#prefix).nodes, now, '+inf'));
    live.add(this.#nodeId);
    const prefix = this.#key('');
    let reported = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 100);
      cursor = next;
      for (const key of keys) {
        if (live.has(key.slice(prefix.length))) continue;
        for (const [connectionId, raw] of Object.entries(await redis.hgetall(key))) {
          const { m, p } = JSON.parse(raw) as { m: string; p: string };
          await report(m, p, connectionId);
          await redis.hdel(key, connectionId);
          reported++;
        }
      }
    } while (cursor !== '0');
    return reported;
  }

  #lost(err: Error, what: 'record' | 'forget'): void {
    this.#log.warn({ err: err.message }, `could not ${what} a connection in Redis`);
  }
}

function topicsOf(c: RoomConnection): string[] {
  if (c.kind === 'waiting') return [`q:${c.queueId}`, `u:${c.userId}`];
  const topics = [`room:${c.meetingId}`, `p:${c.participantId}`, `u:${c.userId}`];
  if (RoomAccess.isHost(c.role)) topics.push(`hosts:${c.meetingId}`);
  return topics;
}
