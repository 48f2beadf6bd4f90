/**
 * Recordings (docs/recordings.md): the states the spec names, the phase a RECORDING one is in, and what
 * the room says of the recording in progress. Types and constants only.
 */

export const RECORDING_STATUSES = ['RECORDING', 'READY', 'FAILED', 'DELETED'] as const;
export type RecordingStatus = (typeof RECORDING_STATUSES)[number];

/** A RECORDING recording is capturing the class, or (stopped) being composed into its file. */
export const RECORDING_PHASES = ['CAPTURING', 'PROCESSING'] as const;
export type RecordingPhase = (typeof RECORDING_PHASES)[number];

/** The recording in progress as the room shows it (null: none). */
export interface RoomRecording {
  recordingId: string;
  startedAt: string;
  /** A host paused it: nothing is recorded until they resume. */
  paused: boolean;
}

export const RECORDING_LIMITS = {
  /** A playback URL's life, by default and at most (seconds). */
  playbackDefaultSeconds: 900,
  playbackMaxSeconds: 86_400,
  /** Recordings are kept this long unless the organization says otherwise (days). */
  retentionDays: 365,
} as const;
