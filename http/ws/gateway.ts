import { randomUUID } from 'node:crypto';
import uws from 'uWebSockets.js';
import type { App } from '../../src/app.ts';
import { AppError, toAppError } from '../../src/errors.ts';
import { meetingActor, waitingRoomActor } from '../../src/runtime/kinds.ts';
import type { RoomEffect } from '../../src/runtime/host.ts';
import { CLOSE_CODES, clientMessage, type CloseReason } from './protocol.ts';
import { clusterKeys } from '../../src/cluster/placement.ts';

interface Conn {
  connectionId: string;
  kind: 'room' | 'waiting';
  meetingId: string;
  sessionId: string;
  userId: string;
  role: string;
  participantId: string;
  queueId: string | null;
  device: string;
  closed: boolean;
}

type Socket = uws.WebSocket<Conn>;

const DEVICES = new Set(['web', 'android', 'ios', 'unknown']);
export const participantIdOf = (sessionId: string) => `par_${sessionId.slice(4)}`;

/**
 * The media-gateway WebSocket at `/api/v1/meetings/:slug/media?token=<mediaToken>`. Any member takes the
 * connection; the meeting actor lives wherever its shard is, and room messages reach every member
 * through the bus and are fanned out to local sockets with uWS topics. A waiting-room page connects the
 * same way with its accessToken and hears when it is admitted.
 */
export class MediaGateway {
  readonly #app: App;
  // Local sockets by audience. uWS topics would do, but a publish made outside a uWS callback sits
  // uncorked until the socket's next write, so every send here is corked per socket.
  readonly #byParticipant = new Map<string, Set<Socket>>();
  readonly #byUser = new Map<string, Set<Socket>>();
  readonly #byTopic = new Map<string, Set<Socket>>();

  #sweep: NodeJS.Timeout | null = null;

  constructor(app: App) {
    this.#app = app;
    app.bus.subscribe('room', (m) => this.#fanOut(m.meetingId as string, m.effects as RoomEffect[]));
    app.bus.subscribe('user-deactivated', (m) => void this.#deactivated(m.userId as string));
    if (app.redis) {
      this.#sweep = setInterval(() => void this.sweepDeadMembers().catch((err) => app.log.warn({ err }, 'connection sweep failed')), 2000);
      this.#sweep.unref();
    }
  }

  /** Room connections per member, in Redis, so others can report them gone when this member dies. */
  #connKey(memberId = this.#app.cluster.memberId): string {
    return `${this.#app.config.AULA_REDIS_PREFIX}conns:${memberId}`;
  }

  /**
   * A member that dies cannot report its sockets closed, and `send` is at-most-once; so every member
   * looks for connection lists of members whose registration expired and reports each connection
   * disconnected (idempotent in the meeting actor), which starts the reconnect grace as usual.
   */
  async sweepDeadMembers(): Promise<number> {
    const redis = this.#app.redis;
    if (!redis) return 0;
    const [sec, usec] = await redis.time();
    const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    const live = new Set(await redis.zrangebyscore(clusterKeys(this.#app.config.AULA_REDIS_PREFIX).members, now, '+inf'));
    live.add(this.#app.cluster.memberId);
    let reported = 0;
    const prefix = this.#connKey('');
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 100);
      cursor = next;
      for (const key of keys) {
        if (live.has(key.slice(prefix.length))) continue;
        for (const [connectionId, raw] of Object.entries(await redis.hgetall(key))) {
          const { m, p } = JSON.parse(raw) as { m: string; p: string };
          await this.#app.cluster.send(meetingActor(m), { type: 'DISCONNECT', participantId: p, connectionId });
          await redis.hdel(key, connectionId);
          reported++;
        }
      }
    } while (cursor !== '0');
    return reported;
  }

  stop(): void {
    if (this.#sweep) clearInterval(this.#sweep);
  }

  /** The actor host's sink: room effects go to every member, each delivers to its own sockets. */
  deliver(actorId: string, effects: RoomEffect[]): void {
    const meetingId = actorId.slice(actorId.indexOf(':') + 1);
    this.#app.bus.publish('room', { meetingId, effects }).catch((err) => this.#app.log.warn({ err, meetingId }, 'could not publish room effects'));
  }

  get connections(): number {
    let n = 0;
    for (const s of this.#byParticipant.values()) n += s.size;
    return n;
  }

  register(server: uws.TemplatedApp): void {
    server.ws<Conn>('/api/v1/meetings/:slug/media', {
      compression: uws.DISABLED,
      maxPayloadLength: 64 * 1024,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => this.#upgrade(res, req, context),
      open: (ws) => void this.#open(ws),
      message: (ws, data) => void this.#message(ws, Buffer.from(data).toString('utf8')),
      close: (ws) => this.#close(ws),
    });
  }

  /** Closes every local socket, e.g. on shutdown, and resolves once they are closed (or after `waitMs`). */
  async closeAll(reason: CloseReason = 'server_shutdown', waitMs = 2000): Promise<void> {
    for (const set of this.#byParticipant.values()) for (const ws of [...set]) this.#end(ws, reason);
    const until = Date.now() + waitMs;
    while (this.connections > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  }

  #upgrade(res: uws.HttpResponse, req: uws.HttpRequest, context: uws.us_socket_context_t): void {
    const slug = req.getParameter(0) ?? '';
    const query = new URLSearchParams(req.getQuery() ?? '');
    const key = req.getHeader('sec-websocket-key');
    const protocol = req.getHeader('sec-websocket-protocol');
    const extensions = req.getHeader('sec-websocket-extensions');
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    this.#authorize(slug, query.get('token') ?? '', query.get('device') ?? 'unknown').then(
      (conn) => {
        if (aborted) return;
        res.cork(() => res.upgrade(conn, key, protocol, extensions, context));
      },
      (err) => {
        if (aborted) return;
        const e = toAppError(err);
        res.cork(() => {
          res.writeStatus(`${e.status} ${e.code}`).writeHeader('Content-Type', 'application/json').end(JSON.stringify(e.toBody(`req_${randomUUID().replaceAll('-', '')}`)));
        });
      },
    );
  }

  async #authorize(slug: string, token: string, device: string): Promise<Conn> {
    const { tokens, clock, sql } = this.#app;
    const now = clock.now();
    const media = tokens.media.read(token);
    const access = media ? null : tokens.access.read(token);
    if (!media && !access) throw new AppError('session_invalid', { message: 'Connect with the mediaToken (or, while waiting, the accessToken) of a meeting session.' });
    const claims = media ?? access!;
    if (claims.e <= now) throw new AppError('session_expired', { message: 'The token has expired; refresh the meeting session.' });
    const [row] = await sql<{ slug: string; revokedAt: Date | null; revokedReason: string | null; role: string; queueId: string | null; userStatus: string }[]>`
      select m.slug, s.revoked_at, s.revoked_reason, s.role, s.queue_id, u.status as user_status
      from meeting_sessions s join meetings m on m.id = s.meeting_id join users u on u.id = s.user_id where s.id = ${claims.s}`;
    if (!row) throw new AppError('session_invalid');
    if (row.slug !== slug) throw new AppError('session_wrong_meeting');
    if (row.userStatus !== 'ACTIVE') throw new AppError('user_deactivated');
    if (row.revokedAt) throw new AppError('session_revoked', { details: { reason: row.revokedReason } });
    if (access && !row.queueId) throw new AppError('session_invalid', { message: 'Only a waiting session may connect with its accessToken; use the mediaToken.' });
    return {
      connectionId: randomUUID(),
      kind: media ? 'room' : 'waiting',
      meetingId: claims.m,
      sessionId: claims.s,
      userId: claims.u,
      role: row.role,
      participantId: participantIdOf(claims.s),
      queueId: row.queueId,
      device: DEVICES.has(device) ? device : 'unknown',
      closed: false,
    };
  }

  async #open(ws: Socket): Promise<void> {
    const c = ws.getUserData();
    add(this.#byParticipant, c.participantId, ws);
    add(this.#byUser, c.userId, ws);
    for (const topic of topicsOf(c)) add(this.#byTopic, topic, ws);
    // Fire and forget, but never unhandled: a rejected command (Redis gone, or the member closing
    // while a socket opens or closes) would otherwise end the process.
    if (c.kind === 'room') this.#app.redis?.hset(this.#connKey(), c.connectionId, JSON.stringify({ m: c.meetingId, p: c.participantId })).catch((err) => this.#connLost(err, 'record'));
    if (c.kind === 'waiting') {
      this.#send(ws, { type: 'waiting', queueId: c.queueId });
      return;
    }
    try {
      const user = await this.#roomUser(c.userId);
      const reply = await this.#app.cluster.ask<{ ok: boolean; error?: { code: string; message: string } }>(meetingActor(c.meetingId), {
        type: 'JOIN',
        participantId: c.participantId,
        sessionId: c.sessionId,
        user,
        roomRole: c.role,
        device: c.device,
        connectionId: c.connectionId,
      });
      if (c.closed) return;
      if (!reply.ok) {
        this.#send(ws, { type: 'error', error: reply.error });
        return this.#end(ws, reply.error?.code === 'meeting_ended' ? 'meeting_ended' : 'refused');
      }
      this.#send(ws, { type: 'joined', ...reply });
    } catch (err) {
      const e = toAppError(err);
      if (!c.closed) {
        this.#send(ws, { type: 'error', error: { code: e.code, message: e.message } });
        this.#end(ws, 'refused');
      }
    }
  }

  async #roomUser(userId: string) {
    const [u] = await this.#app.sql<{ id: string; externalId: string; fullName: string; email: string | null; role: string }[]>`
      select id, external_id, full_name, email, role from users where id = ${userId}`;
    if (!u) throw new AppError('not_a_member');
    return { id: u.id, externalId: u.externalId, name: u.fullName, email: u.email, role: u.role };
  }

  async #message(ws: Socket, text: string): Promise<void> {
    const c = ws.getUserData();
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return this.#send(ws, { type: 'ack', ok: false, error: { code: 'invalid_json', message: 'Frames are JSON.' } });
    }
    const parsed = clientMessage.safeParse(raw);
    if (!parsed.success) {
      return this.#send(ws, { type: 'ack', id: (raw as { id?: unknown })?.id ?? null, ok: false, error: { code: 'validation_failed', message: parsed.error.issues[0]?.message ?? 'invalid' } });
    }
    const msg = parsed.data;
    const ack = (body: unknown) => this.#send(ws, { type: 'ack', id: msg.id ?? null, ...(body as object) });
    if (msg.type === 'ping') return ack({ ok: true });
    if (c.kind === 'waiting') return ack({ ok: false, error: { code: 'forbidden', message: 'Waiting connections only listen.' } });
    const host = c.role === 'HOST' || c.role === 'COHOST';
    try {
      const meeting = meetingActor(c.meetingId);
      const ask = (actorId: string, event: Record<string, unknown>) => this.#app.cluster.ask(actorId, event);
      switch (msg.type) {
        case 'leave':
          return ack(await ask(meeting, { type: 'LEAVE', participantId: c.participantId }));
        case 'end':
          return ack(await ask(meeting, { type: 'END', by: c.participantId }));
        case 'remove':
          return ack(await ask(meeting, { type: 'REMOVE', participantId: msg.participantId, by: c.participantId }));
        case 'mute':
          return ack(await ask(meeting, { type: 'MUTE_REQUEST', participantId: msg.participantId, by: c.participantId }));
        case 'admit':
        case 'deny':
          if (!host) return ack({ ok: false, error: { code: 'forbidden', message: 'Only a host or cohost may admit or deny.' } });
          return ack(await ask(waitingRoomActor(c.meetingId), { type: msg.type === 'admit' ? 'ADMIT' : 'DENY', queueId: msg.queueId, by: c.userId }));
      }
    } catch (err) {
      const e = toAppError(err);
      ack({ ok: false, error: { code: e.code, message: e.message } });
    }
  }

  #connLost(err: Error, what: 'record' | 'forget'): void {
    this.#app.log.warn({ err: err.message }, `could not ${what} a connection in Redis`);
  }

  #close(ws: Socket): void {
    const c = ws.getUserData();
    c.closed = true;
    remove(this.#byParticipant, c.participantId, ws);
    remove(this.#byUser, c.userId, ws);
    for (const topic of topicsOf(c)) remove(this.#byTopic, topic, ws);
    if (c.kind === 'room') {
      this.#app.redis?.hdel(this.#connKey(), c.connectionId).catch((err) => this.#connLost(err, 'forget'));
      void this.#app.cluster
        .send(meetingActor(c.meetingId), { type: 'DISCONNECT', participantId: c.participantId, connectionId: c.connectionId })
        .catch((err) => this.#app.log.warn({ err, meetingId: c.meetingId }, 'could not report a disconnect'));
    }
  }

  #fanOut(meetingId: string, effects: RoomEffect[]): void {
    for (const e of effects) {
      if (e.type === 'send') {
        const text = JSON.stringify(e.message);
        const to = e.to;
        const topic = 'all' in to ? `room:${meetingId}` : 'role' in to ? `hosts:${meetingId}` : 'queue' in to ? `q:${to.queue}` : `p:${to.participantId}`;
        for (const ws of this.#byTopic.get(topic) ?? []) {
          if (!ws.getUserData().closed) ws.send(text);
        }
      } else {
        for (const ws of [...(this.#byParticipant.get(e.participantId) ?? [])]) this.#end(ws, e.code);
      }
    }
  }

  async #deactivated(userId: string): Promise<void> {
    const sockets = [...(this.#byUser.get(userId) ?? [])];
    const meetings = new Set(sockets.filter((ws) => ws.getUserData().kind === 'room').map((ws) => ws.getUserData().meetingId));
    for (const ws of sockets) this.#end(ws, 'user_deactivated');
    for (const m of meetings) {
      await this.#app.cluster.send(meetingActor(m), { type: 'DEACTIVATE_USER', userId }).catch((err) => this.#app.log.warn({ err }, 'deactivation not delivered'));
    }
  }

  #send(ws: Socket, msg: unknown): void {
    if (!ws.getUserData().closed) ws.send(JSON.stringify(msg));
  }

  #end(ws: Socket, reason: CloseReason): void {
    const c = ws.getUserData();
    if (c.closed) return;
    ws.end(CLOSE_CODES[reason], reason);
  }
}

function topicsOf(c: Conn): string[] {
  if (c.kind === 'waiting') return [`q:${c.queueId}`];
  const topics = [`room:${c.meetingId}`, `p:${c.participantId}`];
  if (c.role === 'HOST' || c.role === 'COHOST') topics.push(`hosts:${c.meetingId}`);
  return topics;
}

function add(map: Map<string, Set<Socket>>, key: string, ws: Socket): void {
  let s = map.get(key);
  if (!s) map.set(key, (s = new Set()));
  s.add(ws);
}

function remove(map: Map<string, Set<Socket>>, key: string, ws: Socket): void {
  const s = map.get(key);
  if (!s) return;
  s.delete(ws);
  if (!s.size) map.delete(key);
}
