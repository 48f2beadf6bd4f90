import { randomUUID } from 'node:crypto';
import uws from 'uWebSockets.js';
import { DEVICES, type Device } from '../../src/core/room.ts';
import type { App } from '../../src/services/app.ts';
import type { ConnectionIdentity, RoomConnection } from '../../src/platform/cluster/connections.ts';
import { AppError } from '../../src/core/errors.ts';
import { toAppError } from '../../src/platform/to-app-error.ts';
import type { RoomRole } from '../../src/core/room-access.ts';
import { CLOSE_CODES, PROTOCOL_LIMITS, SIGNALING_TYPES, type ClientMessage, type CloseReason } from '../../src/core/room-protocol.ts';
import { clientMessage } from '../../src/core/room-protocol.schemas.ts';
import { TokenBucket } from './bucket.ts';

/**
 * A session's command budget: a burst for joining a full room (transports, producers, a consumer resume
 * each), then a steady rate. It belongs to the meeting session, not the socket: a new socket of the same
 * session (a reconnect, a second tab) draws from the same bucket, and opening one costs an actor
 * command (its JOIN), so reconnecting is no way around the budget.
 */
export const COMMAND_BUDGET = {
  capacity: 200,
  perSecond: 50,
  /**
   * Commands that reach an actor (and a database commit) cost this much, and so do the signaling requests
   * that make worker objects (those with MEDIA_LIMITS: produce, transport-create); other signaling and ping cost 1.
   */
  actorCost: 10,
  /** Refused for rate this many times within `strikeWindowMs`: the socket is closed with 1008. */
  maxStrikes: 100,
  strikeWindowMs: 10_000,
  /** A session whose socket was closed for flooding may not open another for this long. */
  barredMs: 10_000,
  /** A budget no socket has used for this long is forgotten (it has refilled by then). */
  idleMs: 30_000,
} as const;

/**
 * What one student could flood a class with, each with its own budget per session on top of the command
 * budget: a burst, then a steady rate (every burst refills within COMMAND_BUDGET.idleMs). Raising and
 * lowering one's own hand share one budget.
 */
export const CLASSROOM_LIMITS = {
  hand: { capacity: 4, perSecond: 1 / 5 },
  'ask-question': { capacity: 3, perSecond: 1 / 10 },
  'upvote-question': { capacity: 10, perSecond: 1 },
  'answer-poll': { capacity: 5, perSecond: 1 },
  /** A few lines in a row, then one every two seconds: a conversation, not a flood of the class's screens. */
  'chat-send': { capacity: 5, perSecond: 1 / 2 },
  react: { capacity: 5, perSecond: 1 / 2 },
} as const;

/**
 * Media objects one participant may make, beyond the first producer of each source and the first
 * transport of each direction (joining the room's media): a new producer or transport makes worker
 * objects and, for a producer, a consumer and a resume for everyone else in the room. Enough for
 * turning a camera on and off, sharing screens, and a few media restarts a minute.
 */
export const MEDIA_LIMITS = {
  produce: { capacity: 20, perSecond: 20 / 60 },
  'transport-create': { capacity: 6, perSecond: 6 / 60 },
} as const;

const SESSION_LIMITS = { ...CLASSROOM_LIMITS, ...MEDIA_LIMITS };
type SessionLimit = keyof typeof SESSION_LIMITS;

/** The session limit a command draws from, and the key of its free first use (media) if it has one. */
function limitOf(msg: ClientMessage): { limit: SessionLimit; first?: string } | null {
  if (msg.type === 'raise-hand' || (msg.type === 'lower-hand' && msg.participantId === undefined)) return { limit: 'hand' };
  if (msg.type === 'produce') return { limit: 'produce', first: `produce:${msg.source}` };
  if (msg.type === 'transport-create') return { limit: 'transport-create', first: `transport:${msg.direction}` };
  return Object.hasOwn(CLASSROOM_LIMITS, msg.type) ? { limit: msg.type as SessionLimit } : null;
}

/** One session's budget on this node, shared by its sockets. */
interface SessionBudget {
  bucket: TokenBucket;
  /** The session limits' buckets, made on first use. */
  limits: Map<SessionLimit, TokenBucket>;
  /** The free first uses of media limits taken (`produce:mic`, `transport:send`...). */
  firsts: Set<string>;
  strikes: number;
  strikeWindowStart: number;
  barredUntil: number;
  sockets: number;
  lastUsed: number;
}

const limitNames: Record<SessionLimit, string> = {
  hand: 'raised and lowered hands',
  'ask-question': 'questions',
  'upvote-question': 'upvotes',
  'answer-poll': 'poll answers',
  'chat-send': 'chat messages',
  react: 'reactions',
  produce: 'new producers (cameras, microphones, screens)',
  'transport-create': 'new media transports',
};

export const participantIdOf = (sessionId: string) => `par_${sessionId.slice(4)}`;

interface SocketData {
  conn: UwsConnection;
  budget: SessionBudget;
}
type Socket = uws.WebSocket<SocketData>;

/** How long a socket the server is closing waits for the acks of commands still in flight. */
const ACKS_BEFORE_CLOSE_MS = 2000;

/**
 * A RoomConnection over a uWS socket (set once it opened); every write corked, since sends often happen
 * outside a uWS callback. A socket the server ends answers the commands already in flight first (the
 * `leave` that closes it gets its ack, then the close), for at most ACKS_BEFORE_CLOSE_MS; it takes no new
 * command meanwhile.
 */
interface UwsConnection extends RoomConnection {
  closed: boolean;
  ws: Socket | null;
  /** Commands handed to the rooms service and not answered yet. */
  inFlight: number;
  /** The close waiting for those answers. */
  closing: CloseReason | null;
  /** Answers a command (its ack) and, if the socket is closing and this was the last one, closes it. */
  answer(text: string): void;
}

function uwsConnection(identity: ConnectionIdentity): UwsConnection {
  const close = (c: UwsConnection, reason: CloseReason) => {
    const ws = c.ws;
    if (!ws || c.closed) return;
    c.closed = true;
    ws.cork(() => ws.end(CLOSE_CODES[reason], reason));
  };
  return {
    ...identity,
    connectionId: randomUUID(),
    closed: false,
    ws: null,
    acksOwed: 0,
    inFlight: 0,
    closing: null,
    send(text) {
      const ws = this.ws;
      if (ws && !this.closed) ws.cork(() => ws.send(text));
    },
    answer(text) {
      this.inFlight--;
      this.send(text);
      if (this.closing && this.inFlight === 0) close(this, this.closing);
    },
    end(reason) {
      if (this.closed || this.closing) return;
      if (this.inFlight === 0) return close(this, reason);
      this.closing = reason;
      setTimeout(() => close(this, reason), ACKS_BEFORE_CLOSE_MS).unref();
    },
  };
}

/**
 * The room WebSocket at `/api/v1/meetings/:slug/media?token=<mediaToken>`: transport only. It checks the
 * token at the upgrade, parses and validates each frame against the room protocol, holds each socket to
 * its command budget, hands the command to the rooms service and sends the ack. Any node takes any
 * socket; src/services/live/rooms.ts does the rest.
 */
export class MediaGateway {
  readonly #app: App;
  readonly #budgets = new Map<string, SessionBudget>();
  #sweptAt = 0;

  constructor(app: App) {
    this.#app = app;
  }

  /** The session's budget, after paying for a new socket; refused while barred or without the tokens for a JOIN. */
  #budgetForSocket(sessionId: string, now: number): SessionBudget {
    this.#sweep(now);
    let budget = this.#budgets.get(sessionId);
    if (!budget) {
      budget = { bucket: new TokenBucket(COMMAND_BUDGET.capacity, COMMAND_BUDGET.perSecond, now), limits: new Map(), firsts: new Set(), strikes: 0, strikeWindowStart: 0, barredUntil: 0, sockets: 0, lastUsed: now };
      this.#budgets.set(sessionId, budget);
    }
    budget.lastUsed = now;
    const wait = now < budget.barredUntil ? (budget.barredUntil - now) / 1000 : budget.bucket.take(COMMAND_BUDGET.actorCost, now) ? 0 : budget.bucket.waitFor(COMMAND_BUDGET.actorCost);
    if (wait > 0) {
      const retryAfterSeconds = Math.max(1, Math.ceil(wait));
      this.#app.metrics.rateLimited('room-commands');
      throw new AppError('command_rate_limited', {
        message: now < budget.barredUntil ? 'This meeting session flooded its room socket; reconnect after the time given.' : 'Too many connections or commands for this meeting session; retry after the time given.',
        details: { retryAfterSeconds },
        headers: { 'Retry-After': String(retryAfterSeconds) },
      });
    }
    return budget;
  }

  /** Forgets the budgets of sessions with no socket that have been idle long enough to be full again (at most every few seconds). */
  #sweep(now: number): void {
    if (now - this.#sweptAt < 5_000) return;
    this.#sweptAt = now;
    for (const [id, b] of this.#budgets) {
      if (b.sockets === 0 && now - b.lastUsed > COMMAND_BUDGET.idleMs && now >= b.barredUntil) this.#budgets.delete(id);
    }
  }

  get connections(): number {
    return this.#app.connections.size;
  }

  register(server: uws.TemplatedApp): void {
    server.ws<SocketData>('/api/v1/meetings/:slug/media', {
      compression: uws.DISABLED,
      maxPayloadLength: PROTOCOL_LIMITS.frameBytes,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      upgrade: (res, req, context) => this.#upgrade(res, req, context),
      open: (ws) => this.#open(ws),
      message: (ws, data) => this.#message(ws, Buffer.from(data).toString('utf8')),
      close: (ws) => this.#close(ws),
    });
  }

  /** Closes every local socket (shutdown) and resolves once they are closed, or after `waitMs`. */
  async closeAll(reason: CloseReason = 'server_shutdown', waitMs = 2000): Promise<void> {
    for (const c of this.#app.connections.all()) c.end(reason);
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
      (data) => {
        if (aborted) return;
        data.budget.sockets++;
        res.cork(() => res.upgrade(data, key, protocol, extensions, context));
      },
      (err) => {
        if (aborted) return;
        const e = toAppError(err);
        res.cork(() => {
          res.writeStatus(`${e.status} ${e.code}`).writeHeader('Content-Type', 'application/json');
          for (const [k, v] of Object.entries(e.headers)) res.writeHeader(k, v);
          res.end(JSON.stringify(e.toBody(`req_${randomUUID().replaceAll('-', '')}`)));
        });
      },
    );
  }

  /** The token, the session's budget (before any database read, so a barred session costs none), then the session as of now. */
  async #authorize(slug: string, token: string, device: string): Promise<SocketData> {
    const { tokens, clock, sql } = this.#app;
    const now = clock.now();
    const media = tokens.media.read(token);
    const access = media ? null : tokens.access.read(token);
    if (!media && !access) throw new AppError('session_invalid', { message: 'Connect with the mediaToken (or, while waiting, the accessToken) of a meeting session.' });
    const claims = media ?? access!;
    if (claims.e <= now) throw new AppError('session_expired', { message: 'The token has expired; refresh the meeting session.' });
    const budget = this.#budgetForSocket(claims.s, performance.now());
    const [row] = await sql<{ slug: string; revokedAt: Date | null; revokedReason: string | null; role: RoomRole; queueId: string | null; userStatus: string }[]>`
      select m.slug, s.revoked_at, s.revoked_reason, s.role, s.queue_id, u.status as user_status
      from meeting_sessions s join meetings m on m.id = s.meeting_id join users u on u.id = s.user_id where s.id = ${claims.s}`;
    if (!row) throw new AppError('session_invalid');
    if (row.slug !== slug) throw new AppError('session_wrong_meeting');
    if (row.userStatus !== 'ACTIVE') throw new AppError('user_deactivated');
    if (row.revokedAt) throw new AppError('session_revoked', { details: { reason: row.revokedReason } });
    if (access && !row.queueId) throw new AppError('session_invalid', { message: 'Only a waiting session may connect with its accessToken; use the mediaToken.' });
    const conn = uwsConnection({
      kind: media ? 'room' : 'waiting',
      meetingId: claims.m,
      sessionId: claims.s,
      userId: claims.u,
      role: row.role,
      participantId: participantIdOf(claims.s),
      queueId: row.queueId,
      device: (DEVICES as readonly string[]).includes(device) ? (device as Device) : 'unknown',
    });
    return { conn, budget };
  }

  #open(ws: Socket): void {
    const c = ws.getUserData().conn;
    c.ws = ws;
    this.#app.connections.add(c);
    this.#app.services.rooms.open(c).catch((err) => {
      const e = toAppError(err);
      if (e.status >= 500 && e.code === 'internal_error') this.#app.log.error({ err, meetingId: c.meetingId }, 'room join failed');
      c.send(JSON.stringify({ type: 'error', error: { code: e.code, message: e.message, details: e.details } }));
      c.end(e.code === 'meeting_ended' ? 'meeting_ended' : 'refused');
    });
  }

  #message(ws: Socket, text: string): void {
    const data = ws.getUserData();
    const c = data.conn;
    if (c.closed || c.closing) return;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return c.send(JSON.stringify({ type: 'ack', id: null, ok: false, error: { code: 'invalid_json', message: 'Frames are JSON.' } }));
    }
    const id = typeof (raw as { id?: unknown })?.id === 'string' ? ((raw as { id: string }).id.slice(0, PROTOCOL_LIMITS.idChars)) : null;
    const type = (raw as { type?: unknown })?.type;
    const now = performance.now();
    const budget = data.budget;
    budget.lastUsed = now;
    // The answer to a consumer the server offered is the client's half of the server's own step: never
    // charged, so a receiver is not refused (or closed as an abuser) for what others in the room send.
    const owed = (type === 'consumer-ready' || type === 'consumer-close') && c.acksOwed > 0;
    if (owed) c.acksOwed--;
    const cost = owed ? 0 : typeof type === 'string' && (type === 'ping' || (SIGNALING_TYPES.has(type) && !Object.hasOwn(MEDIA_LIMITS, type))) ? 1 : COMMAND_BUDGET.actorCost;
    if (cost > 0 && !budget.bucket.take(cost, now)) {
      if (now - budget.strikeWindowStart > COMMAND_BUDGET.strikeWindowMs) {
        budget.strikeWindowStart = now;
        budget.strikes = 0;
      }
      if (++budget.strikes > COMMAND_BUDGET.maxStrikes) {
        budget.barredUntil = now + COMMAND_BUDGET.barredMs;
        budget.strikes = 0;
        this.#app.log.warn({ meetingId: c.meetingId, participantId: c.participantId }, 'room socket closed for flooding commands; its session may not reconnect for a while');
        return c.end('abuse');
      }
      const retryAfterSeconds = Math.ceil(budget.bucket.waitFor(cost) * 10) / 10;
      this.#app.metrics.rateLimited('room-commands');
      return c.send(JSON.stringify({ type: 'ack', id, ok: false, error: { code: 'command_rate_limited', message: 'Too many commands on this meeting session; slow down.', details: { retryAfterSeconds } } }));
    }
    const parsed = clientMessage.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return c.send(JSON.stringify({ type: 'ack', id, ok: false, error: { code: 'validation_failed', message: issue?.message ?? 'invalid', details: { fields: parsed.error.issues.map((i) => ({ field: i.path.join('.'), in: 'message', code: i.code, message: i.message })) } } }));
    }
    const limited = limitOf(parsed.data);
    const first = limited?.first !== undefined && !budget.firsts.has(limited.first);
    if (first) budget.firsts.add(limited!.first!);
    if (limited && !first) {
      const { limit } = limited;
      let bucket = budget.limits.get(limit);
      if (!bucket) budget.limits.set(limit, (bucket = new TokenBucket(SESSION_LIMITS[limit].capacity, SESSION_LIMITS[limit].perSecond, now)));
      if (!bucket.take(1, now)) {
        this.#app.metrics.rateLimited(limit in MEDIA_LIMITS ? 'room-media' : 'room-classroom');
        const retryAfterSeconds = Math.ceil(bucket.waitFor(1) * 10) / 10;
        return c.send(JSON.stringify({ type: 'ack', id, ok: false, error: { code: 'command_rate_limited', message: `Too many ${limitNames[limit]}; wait a little.`, details: { retryAfterSeconds, limit } } }));
      }
    }
    c.inFlight++;
    this.#app.services.rooms.command(c, parsed.data).then(
      (result) => c.answer(JSON.stringify({ type: 'ack', id, ok: true, ...result })),
      (err) => {
        const e = toAppError(err);
        if (e.code === 'internal_error') this.#app.log.error({ err, meetingId: c.meetingId, type }, 'room command failed');
        c.answer(JSON.stringify({ type: 'ack', id, ok: false, error: { code: e.code, message: e.message, details: e.details } }));
      },
    );
  }

  #close(ws: Socket): void {
    const { conn: c, budget } = ws.getUserData();
    budget.sockets--;
    budget.lastUsed = performance.now();
    c.closed = true;
    c.ws = null;
    this.#app.connections.remove(c);
    this.#app.services.rooms.closed(c);
  }
}
