import { useEffect, useRef } from 'preact/hooks';
import type { RosterEntry } from '../../../src/core/room.ts';
import type { RemoteTrack } from '../media.ts';
import type { State } from '../reducer.ts';
import { Avatar, Icon } from './common.tsx';

/** The stage: a tile per person (the active speaker outlined), and the presentation layout while someone shares a screen. */

function TrackVideo({ track, mirror, label }: { track: MediaStreamTrack; mirror?: boolean; label: string }) {
  const ref = useRef<HTMLVideoElement>(null);
  useEffect(() => {
    if (ref.current) ref.current.srcObject = new MediaStream([track]);
  }, [track]);
  return <video ref={ref} autoPlay playsInline muted class={mirror ? 'mirror' : ''} aria-label={label} />;
}

function TrackAudio({ track }: { track: MediaStreamTrack }) {
  const ref = useRef<HTMLAudioElement>(null);
  useEffect(() => {
    if (ref.current) ref.current.srcObject = new MediaStream([track]);
  }, [track]);
  return <audio ref={ref} autoPlay />;
}

const QUALITY = ['Connection lost', 'Very poor connection', 'Poor connection', 'Fair connection', 'Good connection', 'Excellent connection'];

export function Quality({ value }: { value: number | undefined }) {
  if (value === undefined) return null;
  return (
    <span class={`quality q${value}`} role="img" aria-label={QUALITY[value]} title={QUALITY[value]}>
      {[1, 2, 3, 4].map((b) => (
        <i class={value >= b + 1 ? 'lit' : ''} style={{ height: `${4 + b * 3}px` }} />
      ))}
    </span>
  );
}

function Tile({ p, me, micOn, video, speaking, quality, main }: { p: RosterEntry; me: boolean; micOn: boolean; video: MediaStreamTrack | null; speaking: boolean; quality: number | undefined; main?: boolean }) {
  return (
    <figure class={`tile${speaking ? ' speaking' : ''}${main ? ' main' : ''}${p.connected ? '' : ' away'}`} aria-label={`${p.name}${me ? ' (you)' : ''}`}>
      {video ? <TrackVideo track={video} mirror={me && !main} label={`${p.name}'s video`} /> : <Avatar name={p.name} />}
      <figcaption>
        {!micOn && (
          <span class="badge" title="Microphone off" aria-label="Microphone off">
            <Icon name="mic" off />
          </span>
        )}
        {p.handRaisedAt && (
          <span class="badge hand" title="Hand raised" aria-label="Hand raised">
            <Icon name="hand" />
          </span>
        )}
        <span class="name">
          {p.name}
          {me ? ' (you)' : ''}
        </span>
        <Quality value={quality} />
      </figcaption>
    </figure>
  );
}

/** What the stage shows of this person: their own camera track (while it is on) and whether their microphone is heard. */
export interface OwnMedia {
  camera: MediaStreamTrack | null;
  micOn: boolean;
}

export function Stage({
  room: s,
  remote,
  own,
}: {
  room: Pick<State, 'roster' | 'participantId' | 'sources' | 'activeSpeaker' | 'quality'>;
  remote: RemoteTrack[];
  own: OwnMedia;
}) {
  const people = s.roster.filter((p) => p.connected || p.participantId === s.participantId);
  const cameraOf = (p: RosterEntry): MediaStreamTrack | null => {
    if (p.participantId === s.participantId) return own.camera;
    const r = remote.find((r) => r.participantId === p.participantId && r.source === 'camera');
    return r && !r.paused ? r.track : null;
  };
  const screen = remote.find((r) => r.source === 'screen' && !r.paused);
  const sharer = screen ? people.find((p) => p.participantId === screen.participantId) : undefined;
  return (
    <div class={`stage${screen ? ' presenting' : ''}`}>
      {screen && (
        <figure class="tile screen" aria-label={`${sharer?.name ?? 'Someone'} is presenting`}>
          <TrackVideo track={screen.track} label={`${sharer?.name ?? 'Someone'}'s screen`} />
          <figcaption>
            <span class="name">{sharer?.name ?? 'Someone'} is presenting</span>
          </figcaption>
        </figure>
      )}
      <div class={`grid n${Math.min(people.length, 9)}`}>
        {people.map((p) => {
          const me = p.participantId === s.participantId;
          return (
            <Tile
              key={p.participantId}
              p={p}
              me={me}
              micOn={me ? own.micOn : s.sources[p.participantId]?.mic === 'on'}
              video={cameraOf(p)}
              speaking={s.activeSpeaker === p.participantId}
              quality={s.quality[p.participantId]}
            />
          );
        })}
      </div>
      {remote
        .filter((r) => r.kind === 'audio')
        .map((r) => (
          <TrackAudio key={r.consumerId} track={r.track} />
        ))}
    </div>
  );
}
