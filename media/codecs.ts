import type { RtpCodecCapability } from 'mediasoup/node/lib/RtpParameters.js';

/**
 * What every room's routers speak: Opus for audio; VP8 for cameras and screens (clients send three
 * simulcast layers of a camera and receivers pick one); H264 (constrained baseline, packetization
 * mode 1) for clients that need it, Safari on older iPhones among them.
 */
export const ROUTER_CODECS: RtpCodecCapability[] = [
  { kind: 'audio', mimeType: 'audio/opus', clockRate: 48000, channels: 2 },
  { kind: 'video', mimeType: 'video/VP8', clockRate: 90000, parameters: { 'x-google-start-bitrate': 1000 } },
  {
    kind: 'video',
    mimeType: 'video/H264',
    clockRate: 90000,
    parameters: { 'packetization-mode': 1, 'profile-level-id': '42e01f', 'level-asymmetry-allowed': 1, 'x-google-start-bitrate': 1000 },
  },
];

/** The simulcast layers a camera is sent in (the browser bundle uses these): 180p, 360p, 720p. */
export const CAMERA_ENCODINGS = [
  { rid: 'r0', scaleResolutionDownBy: 4, maxBitrate: 150_000 },
  { rid: 'r1', scaleResolutionDownBy: 2, maxBitrate: 500_000 },
  { rid: 'r2', scaleResolutionDownBy: 1, maxBitrate: 1_500_000 },
];
