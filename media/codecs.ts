import type { RtpCodecCapability } from 'mediasoup/node/lib/RtpParameters.js';

/**
 * What every room's routers speak: Opus for audio, and one video codec for cameras and screens, VP8,
 * which every current browser both sends and plays (Chrome, Edge, Firefox, Safari since 12.1). One
 * video codec per room: the router cannot transcode, so with two, a sender of one would be invisible to
 * a receiver of only the other. A device that cannot play VP8 is told so at media-ready
 * (`receivesVideo: false`) and still hears the class.
 */
export const ROOM_VIDEO_CODEC = 'video/VP8';

export const ROUTER_CODECS: RtpCodecCapability[] = [
  { kind: 'audio', mimeType: 'audio/opus', clockRate: 48000, channels: 2 },
  { kind: 'video', mimeType: ROOM_VIDEO_CODEC, clockRate: 90000, parameters: { 'x-google-start-bitrate': 1000 } },
];
