import { z } from 'zod';
import { RECORDING_LIMITS, RECORDING_PHASES, RECORDING_STATUSES } from '../../src/core/recording.ts';
import type { RecordingListQuery, RecordingRecord } from '../../src/services/recordings.ts';
import { externalId, isoDate, pageQuery, schemaOf } from './common.ts';

export const recordingRecord = schemaOf<RecordingRecord>()(
  z.object({
    id: z.string(),
    meetingId: z.string(),
    externalMeetingId: z.string().nullable(),
    status: z.enum(RECORDING_STATUSES),
    phase: z.enum(RECORDING_PHASES).nullable().describe('While RECORDING: CAPTURING the class, or PROCESSING (stopped, being composed). Null otherwise.'),
    automatic: z.boolean().describe('Started by settings.recordAutomatically.'),
    paused: z.boolean(),
    startedAt: z.string(),
    endedAt: z.string().nullable(),
    durationSeconds: z.number().int().nullable().describe('Once READY: the length of the file (pauses left out).'),
    fileSizeBytes: z.number().int().nullable(),
    mimeType: z.string().nullable(),
    failureReason: z.string().nullable(),
    deletedAt: z.string().nullable(),
  }),
);

export const recordingListQuery = schemaOf<RecordingListQuery>()(
  z.strictObject({
    ...pageQuery,
    meetingId: externalId.optional().describe('A meeting\'s id or externalId.'),
    status: z.enum(RECORDING_STATUSES).optional(),
    from: isoDate.optional().describe('Started at or after.'),
    to: isoDate.optional().describe('Started before.'),
  }),
);

export const playbackRequest = z.strictObject({
  expiresInSeconds: z
    .number()
    .int()
    .min(60)
    .max(RECORDING_LIMITS.playbackMaxSeconds)
    .optional()
    .describe(`How long the links work: default ${RECORDING_LIMITS.playbackDefaultSeconds}, at most ${RECORDING_LIMITS.playbackMaxSeconds}.`),
});

export const playbackLinks = z.object({
  url: z.string().describe('The video (MP4), signed, short-lived; HTTP Range is supported.'),
  audioUrl: z.string().describe('The audio alone (M4A), for low bandwidth.'),
  embedUrl: z.string().describe('A player page (frame it from one of the organization\'s allowed origins).'),
  expiresAt: z.string(),
});

export const fileParams = z.object({ id: z.string().max(64), file: z.enum(['video', 'audio']) });
export const signedQuery = z.object({ exp: z.string().max(20).optional(), sig: z.string().max(100).optional() });
