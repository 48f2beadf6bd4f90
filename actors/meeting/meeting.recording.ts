import { iso, type ActorErrorCode } from '../../src/core/actor-effects.ts';
import type { RecordingStatus, RoomRecording } from '../../src/core/recording.ts';
import type { ActiveRecording, MeetingContext, MeetingEffect, MeetingEvent, MeetingReplies, RecordingEventData } from './meeting.types.ts';

// The room's recording (docs/recordings.md): pure steps from the meeting's context and one event to the
// recording in progress, the effects (its row, recording.started, the room's indicator) and the reply.
// The media node that hosts the room hears the room's `recording` message and captures; the row's
// PROCESSING phase queues the composition job. Who may give the command is RoomAccess ('record').

type RecordingEvent = Extract<MeetingEvent, { type: 'START_RECORDING' | 'STOP_RECORDING' | 'PAUSE_RECORDING' }>;
export const RECORDING_EVENTS = ['START_RECORDING', 'STOP_RECORDING', 'PAUSE_RECORDING'] as const satisfies readonly RecordingEvent['type'][];

export type RecordingOutcome =
  | { refuse: { code: ActorErrorCode; message: string; details?: Record<string, unknown> } }
  | { recording: ActiveRecording | null; effects: MeetingEffect[]; reply: MeetingReplies[RecordingEvent['type']] };

/** What the room shows of the recording in progress. */
export const roomRecording = (r: ActiveRecording | null | undefined): RoomRecording | null =>
  r ? { recordingId: r.recordingId, startedAt: iso(r.startedAt), paused: r.pausedAt !== null } : null;

const indicator = (r: ActiveRecording | null): MeetingEffect => ({ type: 'send', to: { all: true }, message: { type: 'recording', recording: roomRecording(r) } });

const userOf = (c: MeetingContext, participantId: string | undefined): string | null => (participantId === undefined ? null : (c.participants[participantId]?.user.id ?? null));

/** Starting: its row, recording.started, and everyone's indicator (the media node begins capturing on it). */
export function startRecording(c: MeetingContext, recordingId: string, at: number, startedBy: string | null, automatic: boolean): { recording: ActiveRecording; effects: MeetingEffect[] } {
  const recording: ActiveRecording = { recordingId, startedAt: at, startedBy, automatic, pausedAt: null, pausedMs: 0 };
  return {
    recording,
    effects: [
      { type: 'recording', recording: { ...recording, phase: 'CAPTURING', endedAt: null } },
      { type: 'outbox', eventType: 'recording.started', data: recordingData(c, { recordingId, status: 'RECORDING', startedAt: at }) },
      indicator(recording),
    ],
  };
}

/** Stopping (a host, the API, or the meeting's end): the row moves to PROCESSING, which queues its composition. */
export function stopRecording(r: ActiveRecording, at: number): MeetingEffect[] {
  const pausedMs = r.pausedMs + (r.pausedAt === null ? 0 : at - r.pausedAt);
  return [{ type: 'recording', recording: { ...r, pausedAt: null, pausedMs, phase: 'PROCESSING', endedAt: at } }];
}

export function recordingStep(c: MeetingContext, e: RecordingEvent): RecordingOutcome {
  const active = c.recording ?? null;
  switch (e.type) {
    case 'START_RECORDING': {
      if (active) return { refuse: { code: 'invalid_state', message: 'The class is being recorded already.', details: { recordingId: active.recordingId } } };
      const { recording, effects } = startRecording(c, e.recordingId, e.at, userOf(c, e.by), false);
      return { recording, effects, reply: { ok: true, recording: roomRecording(recording)! } };
    }
    case 'STOP_RECORDING': {
      if (!active || (e.recordingId !== undefined && e.recordingId !== active.recordingId)) {
        return { refuse: { code: 'invalid_state', message: 'The class is not being recorded.', details: {} } };
      }
      return { recording: null, effects: [...stopRecording(active, e.at), indicator(null)], reply: { ok: true, recordingId: active.recordingId } };
    }
    case 'PAUSE_RECORDING': {
      if (!active) return { refuse: { code: 'invalid_state', message: 'The class is not being recorded.', details: {} } };
      if ((active.pausedAt !== null) === e.paused) return { recording: active, effects: [], reply: { ok: true, paused: e.paused } };
      const next: ActiveRecording = e.paused ? { ...active, pausedAt: e.at } : { ...active, pausedAt: null, pausedMs: active.pausedMs + (e.at - active.pausedAt!) };
      return { recording: next, effects: [{ type: 'recording', recording: { ...next, phase: 'CAPTURING', endedAt: null } }, indicator(next)], reply: { ok: true, paused: e.paused } };
    }
  }
}

/** recording.* data from what is known of the recording (the rest null). */
export function recordingData(
  c: Pick<MeetingContext, 'meeting'>,
  r: { recordingId: string; status: RecordingStatus; startedAt: number; endedAt?: number | null; durationSeconds?: number | null; fileSizeBytes?: number | null; mimeType?: string | null; failureReason?: string | null; deletedAt?: number | null },
): RecordingEventData {
  return {
    recordingId: r.recordingId,
    meetingId: c.meeting.meetingId,
    externalMeetingId: c.meeting.externalMeetingId,
    kind: c.meeting.kind,
    status: r.status,
    startedAt: iso(r.startedAt),
    endedAt: r.endedAt == null ? null : iso(r.endedAt),
    durationSeconds: r.durationSeconds ?? null,
    fileSizeBytes: r.fileSizeBytes ?? null,
    mimeType: r.mimeType ?? null,
    failureReason: r.failureReason ?? null,
    deletedAt: r.deletedAt == null ? null : iso(r.deletedAt),
  };
}
