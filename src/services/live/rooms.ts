import type { SendEffect } from '../../core/actor-effects.ts';
import type { ClientSettings, MediaPlacement, RoomMessage, RosterEntry } from '../../../actors/meeting/meeting.types.ts';
import type { MediaRooms, MediaRelayRequest } from './media-rooms.ts';
import type { MediaLoad } from '../../../media/load.ts';
import type { Bus } from '../../platform/cluster/bus.ts';
import { NodeUnavailableError, type Cluster } from '../../platform/cluster/cluster.ts';
import type { Connections, RoomConnection } from '../../platform/cluster/connections.ts';
import type { Db, Sql } from '../../platform/db/index.ts';
import { AppError } from '../../core/errors.ts';
import type { Logger } from '../../platform/logger.ts';
import type { EffectSink, RoomEffect } from '../../platform/runtime/actor-runtime.ts';
import { RoomAccess, type Decision, type HostCommand } from '../../core/room-access.ts';
import type { RoomClients } from './clients.ts';
import type { Meetings } from '../meetings.ts';
import { newId } from '../../platform/ids.ts';
import { pollOptions } from '../../core/classroom.ts';
import { voterHash } from '../polls.ts';
import { SIGNALING_TYPES, type ClientMessage, type MediaEvent, type SignalingRequest } from '../../core/room-protocol.ts';
import type { TurnRelays } from './turn.ts';
import type { ChatLog } from '../chat.ts';
import type { Recordings } from '../recordings.ts';
import { Chat, type ChatTarget } from '../../core/chat.ts';
import type { ChatEvent, WaitingListMessage } from '../../core/room-protocol.ts';

/** What this node knows of a room it holds sockets for, kept current by the room's own messages. */
interface RoomView {
  rev: number;
  standing: Map<string, RosterEntry>;
  settings: ClientSettings;
  media: MediaPlacement | null;
  /** A re-placement asked of the meeting actor and not answered yet. */
  placing: boolean;
}

export interface RoomsOptions {
  sql: Sql;
  clients: RoomClients;
  cluster: Cluster;
  bus: Bus;
  connections: Connections;
  /** For the plan's limit on live meetings, when a join would start one. */
  meetings: Meetings;
  load: MediaLoad;
  /** This node's media rooms, when it has workers. */
  media: MediaRooms | null;
  log: Logger;
  /** How often dead nodes' connections are looked for (ms); 0 turns the sweep off. */
  sweepMs?: number;
  /** Keys who a person is in polls and Q&A (voterHash): derived from the server's secret, the same on every node. */
  voterKey: Buffer;
  /** The TURN relays media sessions may use (AULA_TURN_URLS); null: none configured. */
  turn?: TurnRelays | null;
  /** The chat's rows. */
  chat: ChatLog;
  /** Recordings: the plan's say, and their ids. */
  recordings: Recordings;
  /** Why a meeting's room offers no live captions (the page hides its Captions control), or null; absent: none are made here. */
  captionsUnavailable?: (meetingId: string) => Promise<string | null>;
  /** Told of each media request answered: ICE restarts and resumed media sessions are counted (metrics). */
  signaled?: (type: SignalingRequest['type'], answer: Record<string, unknown>) => void;
}

/** How often sockets' TURN credentials are checked for renewal. */
const TURN_RENEW_CHECK_MS = 30_000;

/** Consumer answers a socket may owe at most (a receiver in the largest room, with room to spare for a media restart). */
const MAX_OWED_ACKS = 2_000;

/** How long a relayed signaling request may take. */
const RELAY_TIMEOUT_MS = 5000;

const refused = (d: NonNullable<Decision>) => new AppError(d.code, { message: d.message });

/**
 * The room service behind the gateway's sockets. Joining, leaving and host commands go to the meeting
 * and waiting-room actors through their typed clients, after RoomAccess has refused at the edge what
 * it can (no actor message, no database write); media signaling is relayed to the node that hosts
 * the room's media. Effects (the actors' and the media rooms') go to every node over the bus and
 * reach local sockets through the connections registry. It also keeps each room's media placed:
 * when the node that hosts it stops publishing its load, the room is re-placed.
 */
export class Rooms implements EffectSink {
  readonly #o: RoomsOptions;
  readonly #views = new Map<string, RoomView>();
  #sweep: NodeJS.Timeout | null = null;
  #turnRenewal: NodeJS.Timeout | null = null;

  constructor(o: RoomsOptions) {
    this.#o = o;
    o.bus.subscribe('room', (m) => this.#fanOut(m.meetingId as string, m.effects as RoomEffect[]));
    o.bus.subscribe('user-deactivated', (m) => void this.#deactivated(m.userId as string, m.erased === true));
    if (o.media) {
      const media = o.media;
      o.cluster.serve('media', (payload) => media.handle(payload as unknown as MediaRelayRequest));
    }
    o.load.onRefresh(() => this.#checkPlacements());
    const sweepMs = o.sweepMs ?? 2000;
    if (sweepMs > 0) {
      this.#sweep = setInterval(() => void this.sweepDeadNodes().catch((err) => o.log.warn({ err }, 'connection sweep failed')), sweepMs);
      this.#sweep.unref();
    }
    if (o.turn) {
      const turn = o.turn;
      this.#turnRenewal = setInterval(() => void turn.renewDue(), TURN_RENEW_CHECK_MS);
      this.#turnRenewal.unref();
    }
  }

  stop(): void {
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#turnRenewal) clearInterval(this.#turnRenewal);
  }

  /** The TURN relays this node hands out, when configured (renewal runs on its own; tests drive it). */
  get turnRelays(): TurnRelays | null {
    return this.#o.turn ?? null;
  }

  /** The placement this node knows for a room it holds sockets of (tests and status). */
  placement(meetingId: string): MediaPlacement | null {
    return this.#views.get(meetingId)?.media ?? null;
  }

  // ---- effects ------------------------------------------------------------------------------------

  /** The sink of the actor runtime and the media rooms: a room's sends and disconnects go to every node. */
  deliver(actorOrMeetingId: string, effects: RoomEffect[]): void {
    const meetingId = actorOrMeetingId.slice(actorOrMeetingId.indexOf(':') + 1);
    this.#o.bus.publish('room', { meetingId, effects }).catch((err) => this.#o.log.warn({ err, meetingId }, 'could not publish room effects'));
  }

  #fanOut(meetingId: string, effects: RoomEffect[]): void {
    for (const e of effects) {
      if (e.type === 'disconnect') {
        for (const c of this.#o.connections.ofParticipant(e.participantId)) {
          if (c.meetingId === meetingId && (!e.connectionIds || e.connectionIds.includes(c.connectionId))) c.end(e.code);
        }
        continue;
      }
      // the meeting actor's room messages and the media rooms' media events share this bus
      const m = e.message as RoomMessage | MediaEvent;
      if (m.type === 'roster' || m.type === 'settings' || m.type === 'media' || m.type === 'recording') {
        this.#observe(meetingId, m);
        this.#o.media?.onRoomMessage(meetingId, m);
      }
      const audience = this.#o.connections.audience(meetingId, (e as SendEffect).to);
      if (!audience.length) continue;
      // Sockets never see which node or worker hosts the media.
      const text = JSON.stringify(m.type === 'media' ? { type: 'media', rev: m.media?.rev ?? 0, available: m.media !== null } : m);
      const offer = m.type === 'consumer-new';
      for (const c of audience) {
        if (offer && c.acksOwed < MAX_OWED_ACKS) c.acksOwed++;
        c.send(text);
      }
    }
  }

  #observe(meetingId: string, m: RoomMessage): void {
    const view = this.#views.get(meetingId);
    if (!view) return;
    if (m.type === 'roster' && m.rev > view.rev) {
      view.rev = m.rev;
      view.standing = new Map(m.participants.map((p) => [p.participantId, p]));
    } else if (m.type === 'settings' && m.rev > view.rev) {
      view.rev = m.rev;
      view.settings = m.settings;
    } else if (m.type === 'media' && (m.media === null || m.media.rev > (view.media?.rev ?? 0))) {
      view.media = m.media;
    }
  }

  // ---- sockets ------------------------------------------------------------------------------------

  /** A socket opened: a participant joins the room (the meeting actor decides), a waiting page just listens. */
  async open(c: RoomConnection): Promise<void> {
    if (c.kind === 'waiting') {
      c.send(JSON.stringify({ type: 'waiting', queueId: c.queueId }));
      // The socket is registered before this read, so an outcome decided from now on is pushed to it;
      // one decided before it opened (admitted while the page was loading) is told now.
      const entry = await this.#o.clients.waitingRoom.status(c.meetingId, { queueId: c.queueId! });
      if (c.closed) return;
      if (entry.status === 'ADMITTED' || entry.status === 'DENIED') c.send(JSON.stringify({ type: entry.status === 'ADMITTED' ? 'admitted' : 'denied', queueId: c.queueId }));
      else if (entry.status === 'EXPIRED') c.send(JSON.stringify({ type: 'expired', queueId: c.queueId, reason: 'timeout' }));
      return;
    }
    const user = await this.#roomUser(c.sessionId);
    // A room this node has seen live cannot be started again; any other join may be the one that starts it.
    const { planAllowsStart, recordingId } = this.#views.has(c.meetingId) ? { planAllowsStart: undefined, recordingId: undefined } : await this.#mayStart(c.meetingId);
    // asked beside the join; a failed read leaves the control shown (turning captions on says why not)
    const captions = this.#o.captionsUnavailable ? this.#o.captionsUnavailable(c.meetingId).catch(() => null) : Promise.resolve('This server does not make live captions.');
    const reply = await this.#o.clients.meeting.join(c.meetingId, {
      ...(planAllowsStart === undefined ? {} : { planAllowsStart }),
      ...(recordingId === undefined ? {} : { recordingId }),
      participantId: c.participantId,
      sessionId: c.sessionId,
      user,
      roomRole: c.role,
      device: c.device,
      connectionId: c.connectionId,
      voter: voterHash(this.#o.voterKey, c.meetingId, c.userId),
      media: this.#o.load.candidate(),
    });
    if (c.closed) return;
    const view = this.#views.get(c.meetingId);
    if (!view || reply.rev >= view.rev) {
      this.#views.set(c.meetingId, {
        rev: reply.rev,
        standing: new Map(reply.roster.map((p) => [p.participantId, p])),
        settings: reply.settings,
        media: reply.media ?? view?.media ?? null,
        placing: view?.placing ?? false,
      });
    }
    const media = this.#views.get(c.meetingId)!.media;
    const captionsUnavailable = await captions;
    if (c.closed) return;
    c.send(
      JSON.stringify({
        type: 'joined',
        ok: true,
        participantId: reply.participantId,
        roster: reply.roster,
        settings: reply.settings,
        locked: reply.locked,
        spotlight: reply.spotlight,
        classroom: reply.classroom,
        media: { rev: media?.rev ?? 0, available: media !== null },
        recording: reply.recording,
        captionsUnavailable,
      }),
    );
    // a host who comes in while people wait sees them at once (the waiting room tells hosts only of changes)
    if (RoomAccess.isHost(c.role) && reply.settings.waitingRoom) {
      const { entries } = await this.#o.clients.waitingRoom.list(c.meetingId, {});
      if (!c.closed && entries.length) c.send(JSON.stringify({ type: 'waiting-room', entries } satisfies WaitingListMessage));
    }
    // the chat so far (a late joiner or a reconnect sees the conversation); what is sent from now on comes as `chat`
    const messages = await this.#o.chat.history(this.#o.sql, c.meetingId, c.userId, RoomAccess.isHost(c.role));
    if (!c.closed) c.send(JSON.stringify({ type: 'chat-history', messages } satisfies ChatEvent));
  }

  /** A socket closed without leaving: the participant may come back within the reconnect grace. */
  closed(c: RoomConnection): void {
    if (c.kind !== 'room') return;
    if (!this.#o.connections.hasRoom(c.meetingId)) this.#views.delete(c.meetingId);
    this.#o.clients.meeting
      .send(c.meetingId, 'DISCONNECT', { participantId: c.participantId, connectionId: c.connectionId })
      .catch((err) => this.#o.log.warn({ err, meetingId: c.meetingId }, 'could not report a disconnect'));
  }

  /**
   * One command of a socket, answered with the fields of its ack (a refusal is thrown). Refusals that
   * RoomAccess can decide from the socket's role and this node's view of the room never reach an actor.
   */
  async command(c: RoomConnection, msg: ClientMessage): Promise<Record<string, unknown>> {
    if (msg.type === 'ping') return {};
    if (c.kind === 'waiting') {
      // the one thing a waiting page says: it gives up its place (the entry settles LEFT)
      if (msg.type !== 'leave') throw new AppError('forbidden', { message: 'A waiting connection only listens until it is admitted, or leaves.' });
      const entry = await this.#o.clients.waitingRoom.leave(c.meetingId, { queueId: c.queueId! });
      c.end('left'); // after this ack: a socket answers the commands in flight before it closes
      return { status: entry.status };
    }
    if (SIGNALING_TYPES.has(msg.type)) return this.#relay(c, msg as SignalingRequest);
    const meeting = this.#o.clients.meeting;
    const m = c.meetingId;
    const by = c.participantId;
    switch (msg.type) {
      case 'leave':
        return strip(await meeting.leave(m, { participantId: by }));
      case 'ask-unmute':
        return strip(await meeting.askUnmute(m, { participantId: by }));
      case 'raise-hand': {
        const { raisedAt } = await meeting.hand(m, { participantId: by, by, raise: true });
        return { raisedAt };
      }
      case 'lower-hand': {
        const target = msg.participantId ?? by;
        if (target !== by) this.#edge(c, 'lower-hand', target);
        const { lowered } = await meeting.hand(m, { participantId: target, by, raise: false });
        return { lowered };
      }
      case 'lower-all-hands':
        this.#edge(c, 'lower-hand');
        return strip(await meeting.lowerAllHands(m, { by }));
      case 'end':
        this.#edge(c, 'end');
        return strip(await meeting.end(m, { by }));
      case 'remove':
        this.#edge(c, 'remove', msg.participantId);
        return strip(await meeting.remove(m, { participantId: msg.participantId, by }));
      case 'mute':
        this.#edge(c, 'mute', msg.participantId);
        return strip(await meeting.mute(m, { participantId: msg.participantId, by }));
      case 'mute-all':
        this.#edge(c, 'mute');
        return strip(await meeting.muteAll(m, { by }));
      case 'allow-unmute':
        this.#edge(c, 'allow-unmute', msg.participantId);
        return strip(await meeting.allowUnmute(m, { participantId: msg.participantId, by }));
      case 'allow-unmute-all':
        this.#edge(c, 'allow-unmute');
        return strip(await meeting.allowUnmuteAll(m, { by }));
      case 'lock':
        this.#edge(c, 'lock');
        return strip(await meeting.lock(m, { by, locked: msg.locked }));
      case 'spotlight':
        this.#edge(c, 'spotlight', msg.participantId ?? undefined);
        return strip(await meeting.spotlight(m, { by, participantId: msg.participantId }));
      case 'floor':
        this.#edge(c, 'floor', msg.participantId);
        return strip(await meeting.floor(m, { participantId: msg.participantId, by, give: msg.give }));
      case 'open-poll': {
        this.#edge(c, 'poll');
        const { poll } = await meeting.openPoll(m, {
          pollId: newId('pol'),
          by,
          question: msg.question,
          pollType: msg.pollType,
          anonymous: msg.anonymous ?? false,
          options: pollOptions(msg.pollType, msg.options ?? []),
          correct: msg.correct ?? [],
        });
        return { poll };
      }
      case 'answer-poll':
        return strip(await meeting.answerPoll(m, { pollId: msg.pollId, participantId: by, voter: voterHash(this.#o.voterKey, m, c.userId), choices: msg.choices ?? [], text: msg.text ?? null }));
      case 'close-poll':
        this.#edge(c, 'poll');
        return strip(await meeting.closePoll(m, { pollId: msg.pollId, by, share: msg.share ?? false }));
      case 'share-poll':
        this.#edge(c, 'poll');
        return strip(await meeting.sharePoll(m, { pollId: msg.pollId, by }));
      case 'ask-question':
        return strip(await meeting.askQuestion(m, { questionId: newId('qst'), participantId: by, voter: voterHash(this.#o.voterKey, m, c.userId), text: msg.text, anonymous: msg.anonymous ?? false }));
      case 'upvote-question':
        return strip(await meeting.upvoteQuestion(m, { questionId: msg.questionId, participantId: by, voter: voterHash(this.#o.voterKey, m, c.userId) }));
      case 'answer-question':
        this.#edge(c, 'answer-question');
        return strip(await meeting.answerQuestion(m, { questionId: msg.questionId, by, answer: msg.answer ?? null }));
      case 'dismiss-question':
        this.#edge(c, 'answer-question');
        return strip(await meeting.dismissQuestion(m, { questionId: msg.questionId, by }));
      case 'admit':
      case 'deny':
        this.#edge(c, msg.type);
        this.#o.log.info({ meetingId: m, queueId: msg.queueId, by: c.userId, via: 'room' }, msg.type === 'admit' ? 'waiting room: admitted' : 'waiting room: denied');
        return strip(await (msg.type === 'admit' ? this.#o.clients.waitingRoom.admit : this.#o.clients.waitingRoom.deny)(m, { queueId: msg.queueId, by: c.userId }));
      case 'chat-send':
        return { message: await this.#chat(c, msg.text, msg.privateTo) };
      case 'chat-delete': {
        this.#edge(c, 'chat');
        const gone = await this.#o.chat.delete(this.#o.sql, m, msg.messageId, c.userId);
        if (!gone) throw new AppError('not_found', { message: 'No such message in this meeting\'s chat.', details: { messageId: msg.messageId } });
        this.#tell(m, gone.privateWith, { type: 'chat-deleted', messageId: msg.messageId });
        return {};
      }
      case 'chat-settings': {
        this.#edge(c, 'chat');
        const [row] = await this.#o.sql<{ orgId: string }[]>`select org_id from meetings where id = ${m}`;
        if (!row) throw new AppError('meeting_not_found');
        const settings = { ...(msg.chat !== undefined ? { chat: msg.chat } : {}), ...(msg.privateChatToHosts !== undefined ? { privateChatToHosts: msg.privateChatToHosts } : {}) };
        // the meeting's own settings change (meeting.updated, PATCH's path): the room hears them as `settings`
        const updated = await this.#o.meetings.update(this.#o.sql, row.orgId, m, { settings });
        return { settings: { chat: updated.settings.chat, privateChatToHosts: updated.settings.privateChatToHosts } };
      }
      case 'react':
        this.#tell(m, null, { type: 'reaction', participantId: by, emoji: msg.emoji });
        return {};
      case 'start-recording': {
        this.#edge(c, 'record');
        const [row] = await this.#o.sql<{ orgId: string }[]>`select org_id from meetings where id = ${m}`;
        await this.#o.recordings.assertMayRecord(this.#o.sql, row!.orgId);
        return strip(await meeting.startRecording(m, { recordingId: newId('rec'), by }));
      }
      case 'stop-recording':
        this.#edge(c, 'record');
        return strip(await meeting.stopRecording(m, { by }));
      case 'pause-recording':
        this.#edge(c, 'record');
        return strip(await meeting.pauseRecording(m, { by, paused: msg.paused }));
      default:
        throw new AppError('bad_request', { message: `unhandled command ${msg.type}` });
    }
  }

  /**
   * A chat message: allowed by the settings this node last heard (Chat.send), stored, then told to those
   * who see it: the room, or a student's conversation with the hosts.
   */
  async #chat(c: RoomConnection, text: string, privateTo: string | undefined) {
    const view = this.#views.get(c.meetingId);
    if (!view) throw new AppError('invalid_state', { message: 'Join the room before you chat.' });
    let target: ChatTarget = { to: 'everyone' };
    let privateWith: string | null = null;
    if (privateTo === 'hosts') {
      target = { to: 'hosts' };
      privateWith = c.participantId;
    } else if (privateTo !== undefined) {
      const to = view.standing.get(privateTo);
      if (!to) throw new AppError('not_found', { message: 'No such participant in the room.', details: { participantId: privateTo } });
      target = { to: 'participant', role: to.roomRole };
      privateWith = privateTo;
    }
    const d = Chat.send(c.role, target, view.settings);
    if (d) throw refused(d);
    const message = await this.#o.chat.add(this.#o.sql, { meetingId: c.meetingId, participantId: c.participantId, roomRole: c.role, privateWith, text });
    this.#tell(c.meetingId, privateWith, { type: 'chat', message });
    return message;
  }

  /** A chat event to those who see it: everyone, or the hosts and the one student of a private conversation. */
  #tell(meetingId: string, privateWith: string | null, message: ChatEvent): void {
    this.deliver(
      meetingId,
      privateWith === null
        ? [{ type: 'send', to: { all: true }, message }]
        : [
            { type: 'send', to: { role: 'hosts' }, message },
            { type: 'send', to: { participantId: privateWith }, message },
          ],
    );
  }

  /** RoomAccess at the edge: the socket's own role, and the target's as this node last heard it. */
  #edge(c: RoomConnection, command: HostCommand, targetId?: string): void {
    const target = targetId === undefined ? undefined : this.#views.get(c.meetingId)?.standing.get(targetId);
    const d = RoomAccess.command(command, c.role, target?.roomRole);
    if (d) throw refused(d);
    if (targetId !== undefined && this.#views.has(c.meetingId) && !target) throw new AppError('not_found', { message: 'No such participant in the room.', details: { participantId: targetId } });
  }

  /** A signaling request, to the node that hosts the room's media (this one: in process). */
  async #relay(c: RoomConnection, request: SignalingRequest): Promise<Record<string, unknown>> {
    const view = this.#views.get(c.meetingId);
    if (!view?.media) throw new AppError('media_unavailable', { message: 'The room has no media server yet; wait for the media message.' });
    const d = request.type === 'produce' ? RoomAccess.produce(request.source, c.role, view.settings) : request.type === 'transport-create' && request.direction === 'send' ? RoomAccess.sends(c.role) : null;
    if (d) throw refused(d);
    if (request.type === 'stop-camera') this.#edge(c, 'stop-camera', request.participantId);
    const payload: MediaRelayRequest = {
      meetingId: c.meetingId,
      placementRev: view.media.rev,
      roomRev: view.rev,
      participantId: c.participantId,
      roomRole: c.role,
      request,
    };
    try {
      const answer = (await this.#o.cluster.call(view.media.nodeId, 'media', payload as unknown as Record<string, unknown>, { timeoutMs: RELAY_TIMEOUT_MS })) as Record<string, unknown>;
      this.#o.signaled?.(request.type, answer);
      // the relays are this node's to hand out: it holds the socket, and renews them on it
      if (request.type === 'media-join') return { ...answer, ...(this.#o.turn ? await this.#o.turn.grant(c) : { iceServers: [], iceServersExpireAt: null }) };
      return answer;
    } catch (err) {
      if (err instanceof NodeUnavailableError) {
        this.#checkPlacements();
        throw new AppError('media_unavailable', { message: 'The room\'s media server did not answer; the room is being moved.', cause: err });
      }
      throw err;
    }
  }

  // ---- placement ----------------------------------------------------------------------------------

  /**
   * Rooms with sockets here whose media node stopped publishing its load (killed, frozen, cut off), or
   * that have no media yet, are placed on the least-loaded live worker through their meeting actor
   * (compare-and-set on the placement revision, so nodes racing to do it agree on one).
   */
  #checkPlacements(): void {
    for (const [meetingId, view] of this.#views) {
      if (view.placing || (view.media && this.#o.load.alive(view.media.nodeId))) continue;
      const to = this.#o.load.candidate();
      if (!to) continue;
      view.placing = true;
      this.#o.clients.meeting
        .placeMedia(meetingId, { rev: view.media?.rev ?? 0, to })
        .then(
          (r) => this.#observe(meetingId, { type: 'media', media: r.media }),
          (err) => this.#o.log.debug({ err, meetingId }, 'could not place the room\'s media'),
        )
        .finally(() => (view.placing = false));
    }
  }

  // ---- nodes and users --------------------------------------------------------------------------

  async sweepDeadNodes(): Promise<number> {
    return this.#o.connections.sweepDeadNodes((meetingId, participantId, connectionId) =>
      this.#o.clients.meeting.send(meetingId, 'DISCONNECT', { participantId, connectionId }),
    );
  }

  async #deactivated(userId: string, erased: boolean): Promise<void> {
    const sockets = this.#o.connections.ofUser(userId);
    const meetings = new Set(sockets.filter((c) => c.kind === 'room').map((c) => c.meetingId));
    for (const c of sockets) c.end('user_deactivated');
    for (const m of meetings) {
      await this.#o.clients.meeting.send(m, 'DEACTIVATE_USER', { userId, ...(erased ? { erased } : {}) }).catch((err) => this.#o.log.warn({ err }, 'deactivation not delivered'));
    }
  }

  /**
   * A deactivated user's places in waiting rooms are given up (the entries settle `LEFT`), so no host
   * sees or admits them; their sessions are revoked already. Called once, by whoever deactivated them.
   */
  async withdrawWaiting(db: Db, userId: string): Promise<void> {
    const rows = await db<{ meetingId: string; queueId: string }[]>`
      select s.meeting_id, s.queue_id from meeting_sessions s join meetings m on m.id = s.meeting_id
      where s.user_id = ${userId} and s.queue_id is not null and s.revoked_reason = 'user_deactivated' and m.status in ('SCHEDULED', 'LIVE')`;
    for (const r of rows) {
      await this.#o.clients.waitingRoom.leave(r.meetingId, { queueId: r.queueId }).catch((err) => this.#o.log.warn({ err, meetingId: r.meetingId }, 'could not withdraw a deactivated user from a waiting room'));
    }
  }

  /**
   * For a meeting not yet live: whether its organization may have one more live (counted now), and the id
   * of the recording it starts if it records automatically and its plan records.
   */
  async #mayStart(meetingId: string): Promise<{ planAllowsStart: boolean | undefined; recordingId: string | undefined }> {
    const [m] = await this.#o.sql<{ orgId: string; status: 'SCHEDULED' | 'LIVE'; settings: { recordAutomatically?: boolean } }[]>`select org_id, status, settings from meetings where id = ${meetingId}`;
    if (m?.status !== 'SCHEDULED') return { planAllowsStart: undefined, recordingId: undefined };
    return {
      planAllowsStart: !(await this.#o.meetings.liveLoad(this.#o.sql, m.orgId, 'fresh')).full,
      recordingId: await this.#o.recordings.autoRecordingId(this.#o.sql, { orgId: m.orgId, status: m.status, settings: { recordAutomatically: m.settings.recordAutomatically === true } }),
    };
  }

  /** The person as the room and participant.* events show them: named by the join link's displayName (the user's name when it gave none). */
  async #roomUser(sessionId: string) {
    const [u] = await this.#o.sql<{ id: string; externalId: string; displayName: string; email: string | null; role: 'TEACHER' | 'STUDENT' | 'ADMIN' }[]>`
      select u.id, u.external_id, s.display_name, u.email, u.role from meeting_sessions s join users u on u.id = s.user_id where s.id = ${sessionId}`;
    if (!u) throw new AppError('not_a_member');
    return { id: u.id, externalId: u.externalId, name: u.displayName, email: u.email, role: u.role };
  }
}

/** An actor's reply as the fields of an ack (`ok` is the ack's own). */
function strip(reply: { ok: true }): Record<string, unknown> {
  const { ok: _ok, ...rest } = reply as Record<string, unknown>;
  return rest;
}
