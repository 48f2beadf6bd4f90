import type { MediaKind, ViewTile } from '../src/core/room-protocol.ts';
import { PROTOCOL_LIMITS } from '../src/core/room-protocol.ts';
import type { MediaSource } from '../src/core/room-access.ts';

/**
 * What a receiver gets of each video, decided on the server from what its page shows (the `view`
 * message): a video whose tile is not on the page is paused; a visible one gets the simulcast layer
 * that fits its tile; the screen and the hosts' cameras go first when bandwidth is short. Pure, so the
 * rules are tested apart from mediasoup (test/media/view.test.ts).
 */

/** What one receiver shows: its tiles by `tileKey`, or null before its first `view` (every video, at the top layer). */
export interface ReceiverView {
  tiles: Map<string, ViewTile> | null;
  audioOnly: boolean;
}

export const NO_VIEW_YET: ReceiverView = { tiles: null, audioOnly: false };

export const tileKey = (participantId: string, source: MediaSource): string => `${participantId}:${source}`;

export function receiverView(tiles: ViewTile[], audioOnly: boolean): ReceiverView {
  return { tiles: new Map(tiles.map((t) => [tileKey(t.participantId, t.source), t])), audioOnly };
}

/**
 * The layers a camera is sent in are 1/4, 1/2 and full size of 720p (180, 360, 720 lines: CAMERA_ENCODINGS).
 * A tile takes the smallest layer that is no less than about 3/4 of the lines the picture shows in it,
 * in CSS pixels: a 16:9 picture fitted into the tile (a tall phone tile shows it as wide as the tile).
 */
const LAYER_LINES = [240, 480] as const;

export function layerForTile(t: { width: number; height: number }): number {
  const lines = Math.min(t.height, (t.width * 9) / 16);
  const i = LAYER_LINES.findIndex((max) => lines <= max);
  return i === -1 ? PROTOCOL_LIMITS.maxLayer : i;
}

/** mediasoup's consumer priorities (1 to 255): when a receiver's bandwidth is short, the higher keep their layers. */
export const PRIORITY = { screen: 255, host: 128, large: 64, thumbnail: 1 } as const;

export interface ConsumerPlan {
  /** Sent to the receiver (resumed) or not (paused). */
  on: boolean;
  /** The preferred spatial layer of a video; null for audio. */
  spatialLayer: number | null;
  priority: number;
}

/** What a receiver with `view` gets of one producer: `from` is the sender's producer (whose, what, and whether its sender is a host). */
export function planConsumer(view: ReceiverView, from: { participantId: string; source: MediaSource; kind: MediaKind; host: boolean }): ConsumerPlan {
  if (from.kind === 'audio') return { on: true, spatialLayer: null, priority: PRIORITY.thumbnail };
  if (view.audioOnly) return { on: false, spatialLayer: 0, priority: PRIORITY.thumbnail };
  const tile = view.tiles === null ? null : view.tiles.get(tileKey(from.participantId, from.source));
  if (view.tiles !== null && !tile) return { on: false, spatialLayer: 0, priority: PRIORITY.thumbnail };
  const spatialLayer = tile ? layerForTile(tile) : PROTOCOL_LIMITS.maxLayer;
  const priority = from.source === 'screen' ? PRIORITY.screen : from.host ? PRIORITY.host : spatialLayer === PROTOCOL_LIMITS.maxLayer ? PRIORITY.large : PRIORITY.thumbnail;
  return { on: true, spatialLayer, priority };
}

/** Dynacast: the top layer anyone receives of a producer, from its consumers' plans (0 when nobody receives it: the smallest stays encoded, for a quick start). */
export function wantedLayer(plans: Iterable<ConsumerPlan>): number {
  let top = 0;
  for (const p of plans) if (p.on && p.spatialLayer !== null && p.spatialLayer > top) top = p.spatialLayer;
  return top;
}
