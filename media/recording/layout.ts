import type { SpeakerChange } from './format.ts';

/**
 * What the composed video shows when (compose.ts draws it): a shared screen large with the teacher's
 * camera beside it; otherwise the active speaker's camera over the whole frame; black when there is no
 * video. Pure: from when each camera and screen was on and who spoke, to which track is drawn in which
 * place over which spans of the segment (ms of recording time).
 */

export type Span = [number, number];

export interface VideoTrack {
  trackId: string;
  participantId: string;
  /** A host or cohost: the teacher, whose camera goes beside a shared screen. */
  host: boolean;
  source: 'camera' | 'screen';
  /** When it was on (frames came), in order. */
  spans: Span[];
}

/** `full`: the whole frame; `screen`: the left 960x720; `side`: small, to the right of a screen. */
export type Role = 'full' | 'screen' | 'side';

export interface Placement {
  trackId: string;
  role: Role;
  spans: Span[];
}

/** A speaker who speaks for less than this does not take the picture (the last one shown keeps it). */
export const MIN_SPEAKER_MS = 1000;

/** The speakers timeline without the turns shorter than MIN_SPEAKER_MS, "nobody" included. */
export function steadySpeakers(speakers: SpeakerChange[], durationMs: number): SpeakerChange[] {
  const sorted = [...speakers].sort((a, b) => a.at - b.at);
  const out: SpeakerChange[] = [];
  sorted.forEach((s, i) => {
    const until = sorted[i + 1]?.at ?? durationMs;
    if (until - s.at >= MIN_SPEAKER_MS && out.at(-1)?.participantId !== s.participantId) out.push(s);
  });
  return out;
}

const within = (spans: Span[], a: number, b: number) => spans.some(([s, e]) => s <= a && b <= e);

export function layout(o: { durationMs: number; tracks: VideoTrack[]; speakers: SpeakerChange[] }): Placement[] {
  const tracks = o.tracks.map((t) => ({
    ...t,
    spans: t.spans.map(([s, e]): Span => [Math.max(0, s), Math.min(o.durationMs, e)]).filter(([s, e]) => e > s),
  }));
  const speakers = steadySpeakers(o.speakers, o.durationMs);
  const cuts = new Set<number>([0, o.durationMs]);
  for (const t of tracks) for (const [s, e] of t.spans) cuts.add(s).add(e);
  for (const s of speakers) if (s.at > 0 && s.at < o.durationMs) cuts.add(s.at);
  const times = [...cuts].sort((a, b) => a - b);

  const placements = new Map<string, Placement>();
  const place = (trackId: string, role: Role, a: number, b: number) => {
    const key = `${role} ${trackId}`;
    const p = placements.get(key) ?? placements.set(key, { trackId, role, spans: [] }).get(key)!;
    const last = p.spans.at(-1);
    if (last && last[1] === a) last[1] = b;
    else p.spans.push([a, b]);
  };

  let lastShown: string | null = null; // a participant
  let lastSide: string | null = null;
  for (let i = 0; i + 1 < times.length; i++) {
    const a = times[i]!;
    const b = times[i + 1]!;
    const on = tracks.filter((t) => within(t.spans, a, b));
    const cameras = on.filter((t) => t.source === 'camera');
    const cameraOf = (participantId: string | null) => (participantId === null ? undefined : cameras.find((c) => c.participantId === participantId));
    const speaker = speakers.filter((s) => s.at <= a).at(-1)?.participantId ?? null;
    // the screen shared most recently, if two are
    const screen = on
      .filter((t) => t.source === 'screen')
      .map((t) => ({ t, since: t.spans.find(([s, e]) => s <= a && b <= e)![0] }))
      .sort((x, y) => y.since - x.since)[0]?.t;
    if (screen) {
      place(screen.trackId, 'screen', a, b);
      const hosts = cameras.filter((c) => c.host);
      const side: VideoTrack | undefined =
        hosts.find((c) => c.participantId === speaker) ?? hosts.find((c) => c.participantId === lastSide) ?? hosts[0] ?? cameraOf(speaker) ?? cameraOf(lastSide);
      if (side) {
        place(side.trackId, 'side', a, b);
        lastSide = side.participantId;
      }
      continue;
    }
    const main: VideoTrack | undefined = cameraOf(speaker) ?? cameraOf(lastShown) ?? cameras.find((c) => c.host) ?? cameras[0];
    if (main) {
      place(main.trackId, 'full', a, b);
      lastShown = main.participantId;
    }
  }
  return [...placements.values()];
}
