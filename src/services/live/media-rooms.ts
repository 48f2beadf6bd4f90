import type { Recordings } from '../recordings.ts';
import type { RoomRecording } from '../../core/recording.ts';
import type { RtpCapabilities, RtpParameters } from 'mediasoup/node/lib/RtpParameters.js';
import type { DtlsParameters } from 'mediasoup/node/lib/WebRtcTransport.js';
import type { SendEffect } from '../../core/actor-effects.ts';
import type { MediaPlacement, RoomMessage } from '../../../actors/meeting/meeting.types.ts';
import { AppError } from '../../core/errors.ts';
import type { Logger } from '../../platform/logger.ts';
import type { RoomRole } from '../../core/room-access.ts';
import type { RoomClients } from './clients.ts';
import type { SignalingRequest } from '../../core/room-protocol.ts';
import type { MediaLoad } from '../../../media/load.ts';
import { InOrder } from './in-order.ts';
import type { TranscriptionEngine } from '../../platform/ai/asr.ts';
import { RoomMedia, type MediaTarget } from '../../../media/room.ts';
import type { WorkerPool } from '../../../media/workers.ts';

/** A participant's signaling request, relayed by the node that holds its socket to the node that hosts the room's media. */
export interface MediaRelayRequest {
  meetingId: string;
  /** The placement revision the relaying node knows: a request for a placement this node does not host is refused. */
  placementRev: number;
  /** The room revision at which the relaying node knew the participant was in. */
  roomRev: number;
  participantId: string;
  roomRole: RoomRole;
  request: SignalingRequest;
}

/**
 * Signaling requests of one participant waiting behind the one being handled. An honest client has a
 * handful in flight (transports, producers, an answer per new consumer); the gateway's budgets bound a
 * flood long before this, so reaching it means requests pile up faster than the worker answers them.
 */
export const MAX_QUEUED_PER_PEER = 64;

/** How often each open room checks itself with its meeting actor (MediaRooms.reconcile). */
export const RECONCILE_MS = 30_000;

export interface MediaRoomsOptions {
  nodeId: string;
  pool: WorkerPool;
  load: MediaLoad;
  rooms: RoomClients;
  /** Sends media events to participants, wherever their sockets are (the rooms service's bus). */
  deliver(meetingId: string, effects: SendEffect[]): void;
  log: Logger;
  capacity: number;
  maxIncomingBitrate: number;
  initialOutgoingBitrate: number;
  /** Where a recording's segments are numbered and saved (src/services/recordings.ts); absent: rooms here are not recorded. */
  recordings?: Pick<Recordings, 'segmentStarted' | 'segmentSaved'>;
  /**
   * Whether a meeting's organization may have live captions (docs/ai-notes.md): the engine and its
   * language, or why not (the plan, the organization's AI switch, no engine, a language it cannot do).
   * Absent: captions are refused on this server.
   */
  captions?(meetingId: string): Promise<{ engine: TranscriptionEngine; language: string } | string>;
}

/**
 * The rooms whose media this node hosts. Signaling arrives as relayed requests (one handler per
 * request type, each a few lines on RoomMedia); the room's roster, settings and placement arrive as
 * the meeting actor's room messages, the same ones sockets hear. A room is opened on the first request
 * for a placement that names this node, and closed when the placement moves or the room empties.
 */
export class MediaRooms {
  readonly #o: MediaRoomsOptions;
  readonly #rooms = new Map<string, Promise<RoomMedia>>();
  /** Each participant's signaling, one request at a time. */
  readonly #signaling = new InOrder(MAX_QUEUED_PER_PEER);
  /** Rooms found with nobody's media in them at the last reconcile. */
  readonly #idle = new Set<string>();
  /** The organization of each recording captured here (its storage folder). */
  readonly #segmentOrgs = new Map<string, string>();
  readonly #reconciler: NodeJS.Timeout;
  #closed = false;

  constructor(o: MediaRoomsOptions) {
    this.#o = o;
    o.pool.on('replaced', (index) => void this.#workerReplaced(index));
    this.#reconciler = setInterval(() => void this.reconcile(), RECONCILE_MS);
    this.#reconciler.unref();
  }

  /**
   * Each open room checks itself with its meeting actor: the roster, settings and placement come over
   * the bus at most once, so one lost (the last roster of a class, a placement that moved) is mended
   * here; a room whose meeting is no longer live or whose media moved away closes; a room nobody has
   * media in at two checks in a row closes.
   */
  async reconcile(): Promise<void> {
    for (const [meetingId, pending] of [...this.#rooms]) {
      const room = await pending.catch(() => null);
      if (!room || room.closed) continue;
      try {
        const state = await this.#o.rooms.meeting.roomState(meetingId);
        if (state.status !== 'LIVE' || !this.#hosts(state.media, room.placementRev)) {
          this.#close(meetingId, room, state.status !== 'LIVE' ? 'its meeting is no longer live' : 'the placement moved');
          continue;
        }
        room.applyState({ rev: state.rev, roster: state.roster, settings: state.settings });
        if ((room.recording?.recordingId ?? null) !== (state.recording?.recordingId ?? null)) void this.#recordAs(meetingId, room, state.recording);
        if (state.roster.length === 0) {
          this.#close(meetingId, room, 'the room emptied');
          continue;
        }
      } catch (err) {
        this.#o.log.warn({ err, meetingId }, 'could not reconcile a room\'s media with its meeting');
      }
      if (room.closed) continue;
      if (room.peers > 0) this.#idle.delete(meetingId);
      else if (this.#idle.has(meetingId)) this.#close(meetingId, room, 'nobody has media in it');
      else this.#idle.add(meetingId);
    }
  }

  /** Rooms open here now. */
  get size(): number {
    return this.#rooms.size;
  }

  /** The rooms open here, their participants with media, and their producers and consumers (for the metrics). */
  async counts(): Promise<{ rooms: number; participants: number; producers: number; consumers: number; relayed: number }> {
    const rooms = await Promise.all([...this.#rooms.values()].map((r) => r.catch(() => null)));
    const total = { rooms: 0, participants: 0, producers: 0, consumers: 0, relayed: 0 };
    for (const room of rooms) {
      if (!room) continue;
      const c = room.counts();
      total.rooms++;
      total.participants += c.participants;
      total.producers += c.producers;
      total.consumers += c.consumers;
      total.relayed += c.relayed;
    }
    return total;
  }

  async room(meetingId: string): Promise<RoomMedia | null> {
    return (await this.#rooms.get(meetingId)?.catch(() => null)) ?? null;
  }

  /** One relayed request, handled once the participant's earlier ones have been answered. */
  handle(r: MediaRelayRequest): Promise<Record<string, unknown>> {
    return this.#signaling.run(`${r.meetingId}:${r.participantId}`, async () => this.#dispatch(await this.#open(r.meetingId, r.placementRev), r));
  }

  #dispatch(room: RoomMedia, r: MediaRelayRequest): Promise<Record<string, unknown>> | Record<string, unknown> {
    const q = r.request;
    const p = r.participantId;
    switch (q.type) {
      case 'media-join':
        return room.join(p, r.roomRole, r.roomRev, q.resume === true);
      case 'transport-create':
        return room.createTransport(p, q.direction);
      case 'transport-connect':
        return room.connectTransport(p, q.transportId, q.dtlsParameters as unknown as DtlsParameters);
      case 'transport-restart-ice':
        return room.restartIce(p, q.transportId);
      case 'media-ready':
        return room.ready(p, q.rtpCapabilities as unknown as RtpCapabilities);
      case 'produce':
        return room.produce(p, { transportId: q.transportId, kind: q.kind, source: q.source, rtpParameters: q.rtpParameters as unknown as RtpParameters, ...(q.paused === undefined ? {} : { paused: q.paused }) });
      case 'producer-pause':
        return room.pauseProducer(p, q.producerId);
      case 'producer-resume':
        return room.resumeProducer(p, q.producerId);
      case 'producer-close':
        return room.closeProducerById(p, q.producerId);
      case 'media-resync':
        return room.resync(p) as unknown as Record<string, unknown>;
      case 'stop-camera':
        return room.stopCamera(p, r.roomRole, q.participantId);
      case 'view':
        return room.setView(p, q.tiles, q.audioOnly === true);
      case 'consumer-ready':
        return room.consumerReady(p, q.consumerId);
      case 'consumer-close':
        return room.consumerClose(p, q.consumerId);
      case 'media-report':
        return room.report(p, q);
      case 'captions':
        return this.#setCaptions(room, r.meetingId, p, q.on);
    }
  }

  async #setCaptions(room: RoomMedia, meetingId: string, participantId: string, on: boolean): Promise<Record<string, unknown>> {
    if (!on) return room.setCaptions(participantId, false, null);
    const allowed = this.#o.captions ? await this.#o.captions(meetingId) : 'This server does not make live captions.';
    if (typeof allowed === 'string') throw new AppError('ai_notes_unavailable', { message: allowed, details: { feature: 'captions' } });
    return room.setCaptions(participantId, true, allowed);
  }

  /** The meeting actor's room messages: placement moves close the room here; roster and settings are applied. */
  onRoomMessage(meetingId: string, m: RoomMessage): void {
    const pending = this.#rooms.get(meetingId);
    if (!pending) return;
    void pending.then(
      (room) => {
        if (m.type === 'media') {
          if (!this.#hosts(m.media, room.placementRev)) this.#close(meetingId, room, 'the placement moved');
        } else if (m.type === 'roster') {
          room.applyState({ rev: m.rev, roster: m.participants });
          if (m.participants.length === 0) this.#close(meetingId, room, 'the room emptied');
        } else if (m.type === 'settings') {
          room.applyState({ rev: m.rev, settings: m.settings });
        } else if (m.type === 'recording') {
          void this.#recordAs(meetingId, room, m.recording);
        }
      },
      () => {},
    );
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#reconciler);
    for (const [meetingId, pending] of this.#rooms) void pending.then((room) => this.#close(meetingId, room, 'shutting down'), () => {});
    this.#rooms.clear();
  }

  #hosts(media: MediaPlacement | null, rev: number): boolean {
    return media !== null && media.nodeId === this.#o.nodeId && media.rev === rev;
  }

  /**
   * Brings the room's capture in line with the recording the meeting actor says is in progress: a new
   * segment begins (numbered by the recording's row), a pause or resume, or the capture stops and its
   * segment is saved to storage. Capture runs here only while this node hosts the room.
   */
  async #recordAs(meetingId: string, room: RoomMedia, want: RoomRecording | null): Promise<void> {
    const rec = this.#o.recordings;
    if (!rec || room.closed) return;
    const have = room.recording;
    try {
      if (have && (!want || want.recordingId !== have.recordingId)) await this.#saveSegment(meetingId, room);
      if (!want) return;
      if (!room.recording) {
        const seg = await rec.segmentStarted(want.recordingId);
        if (!seg || room.closed) return;
        await room.startRecording({ recordingId: want.recordingId, segment: seg.segment, dir: seg.dir, nodeId: this.#o.nodeId, paused: want.paused });
        this.#segmentOrgs.set(want.recordingId, seg.orgId);
        this.#o.log.info({ meetingId, recordingId: want.recordingId, segment: seg.segment }, 'recording: capture started');
      } else await room.pauseRecording(want.paused);
    } catch (err) {
      this.#o.log.warn({ err, meetingId }, 'recording: could not follow the room\'s recording');
    }
  }

  /** The room's capture stops and its segment goes to storage. */
  async #saveSegment(meetingId: string, room: RoomMedia): Promise<void> {
    const have = room.recording;
    const manifest = await room.stopRecording();
    if (!have || !manifest) return;
    const orgId = this.#segmentOrgs.get(have.recordingId);
    if (!orgId || !this.#o.recordings) return;
    await this.#o.recordings.segmentSaved(orgId, have.recordingId, have.segment, have.dir);
    this.#o.log.info({ meetingId, recordingId: have.recordingId, segment: have.segment, tracks: manifest.tracks.length, ms: manifest.durationMs }, 'recording: segment saved');
  }

  #close(meetingId: string, room: RoomMedia, why: string): void {
    // a capture in progress is saved before the room's routers go (the transport closes with them)
    if (room.recording) void this.#saveSegment(meetingId, room).catch((err) => this.#o.log.warn({ err, meetingId }, 'recording: a segment could not be saved'));
    room.close();
    this.#idle.delete(meetingId);
    void this.#rooms.get(meetingId)?.then((r) => {
      if (r === room) this.#rooms.delete(meetingId);
    }, () => {});
    this.#o.log.info({ meetingId, why }, 'room media closed');
  }

  /** The room at this placement, opened here on first use after checking with the meeting actor that the placement is ours. */
  async #open(meetingId: string, placementRev: number): Promise<RoomMedia> {
    if (this.#closed) throw new AppError('media_unavailable', { message: 'This server is shutting down.' });
    let pending = this.#rooms.get(meetingId);
    if (pending) {
      const room = await pending.catch(() => null);
      if (room && !room.closed && room.placementRev === placementRev) return room;
      if (room && room.placementRev > placementRev) throw new AppError('media_unavailable', { message: 'The room\'s media moved; wait for the media message.' });
      if (room) this.#close(meetingId, room, 'a newer placement');
      pending = undefined;
    }
    pending = (async () => {
      const state = await this.#o.rooms.meeting.roomState(meetingId);
      if (!this.#hosts(state.media, placementRev)) throw new AppError('media_unavailable', { message: 'The room\'s media is not placed on this server.' });
      const worker = this.#o.pool.at(state.media!.worker);
      if (!worker) throw new AppError('media_unavailable', { message: 'The room\'s media worker is being replaced.' });
      const room = await RoomMedia.open({
        meetingId,
        placementRev,
        pool: this.#o.pool,
        worker,
        capacity: this.#o.capacity,
        maxIncomingBitrate: this.#o.maxIncomingBitrate,
        initialOutgoingBitrate: this.#o.initialOutgoingBitrate,
        log: this.#o.log,
        state: { rev: state.rev, roster: state.roster, settings: state.settings },
        emit: (to: MediaTarget, message) => this.#o.deliver(meetingId, [{ type: 'send', to, message }]),
      });
      // a room placed here while it is being recorded: the recording goes on in a new segment
      if (state.recording) void this.#recordAs(meetingId, room, state.recording);
      return room;
    })();
    this.#rooms.set(meetingId, pending);
    pending.catch(() => {
      if (this.#rooms.get(meetingId) === pending) this.#rooms.delete(meetingId);
    });
    return pending;
  }

  /** A worker died: its rooms are closed here and re-placed through their meeting actors (clients reconnect their transports). */
  async #workerReplaced(index: number): Promise<void> {
    for (const [meetingId, pending] of [...this.#rooms]) {
      const room = await pending.catch(() => null);
      if (!room || !room.workers.includes(index)) continue;
      this.#close(meetingId, room, 'its worker died');
      await this.#o.load.refresh();
      const to = this.#o.load.candidate();
      if (!to) continue;
      await this.#o.rooms.meeting
        .placeMedia(meetingId, { rev: room.placementRev, to })
        .catch((err) => this.#o.log.warn({ err, meetingId }, 'could not re-place a room after its worker died'));
    }
  }
}
