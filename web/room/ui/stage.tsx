import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { RosterEntry } from '../../../src/core/room.ts';
import { gridFor, layout, pageSize, tallestTile, thumbnailsFit, type Focus } from '../layout.ts';
import type { RemoteTrack } from '../media.ts';
import type { State } from '../reducer.ts';
import { Avatar, Icon } from './common.tsx';

/**
 * The stage, as layout.ts decides it: a focus (a shared screen, the spotlight, a pin, or the speaker)
 * with a page of thumbnails beside it, or a page of tiles sized to fill the stage; page buttons when
 * there is more than a page; a strip with the names of people who have no tile. Every video on
 * screen carries data-view-participant and data-view-source: what view-reporter.ts tells the server.
 */

const GAP = 8;

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

/** An element's size in CSS pixels, kept current. */
function useSize<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  const [size, setSize] = useState({ width: 0, height: 0 });
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => {
      const r = el.getBoundingClientRect();
      setSize((s) => (Math.round(r.width) === s.width && Math.round(r.height) === s.height ? s : { width: Math.round(r.width), height: Math.round(r.height) }));
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref.current]);
  return [ref, size] as const;
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

/** The label a host's tile carries: Teacher in a class, Host in a meeting. */
export function roleTag(p: RosterEntry, kind: string | undefined): string | null {
  if (p.roomRole === 'HOST') return kind === 'CLASS' ? 'Teacher' : 'Host';
  if (p.roomRole === 'COHOST') return 'Co-host';
  return null;
}

interface TileProps {
  p: RosterEntry;
  me: boolean;
  micOn: boolean;
  video: MediaStreamTrack | null;
  speaking: boolean;
  quality: number | undefined;
  tag: string | null;
  pinned: boolean;
  spotlit: boolean;
  big?: boolean;
  onPin: (participantId: string | null) => void;
}

function Tile({ p, me, micOn, video, speaking, quality, tag, pinned, spotlit, big, onPin }: TileProps) {
  return (
    <figure
      class={`tile${speaking ? ' speaking' : ''}${big ? ' big' : ''}${p.connected ? '' : ' away'}`}
      aria-label={`${p.name}${me ? ' (you)' : ''}${tag ? `, ${tag}` : ''}`}
      data-view-participant={p.participantId}
      data-view-source="camera"
    >
      {video ? <TrackVideo track={video} mirror={me} label={`${p.name}'s video`} /> : <Avatar name={p.name} />}
      {(tag || spotlit) && (
        <span class="tags">
          {spotlit && <span class="tag spot">Spotlight</span>}
          {tag && <span class="tag">{tag}</span>}
        </span>
      )}
      {!me && (
        <button class={`pin${pinned ? ' on' : ''}`} aria-pressed={pinned} aria-label={pinned ? `Unpin ${p.name}` : `Pin ${p.name}`} title={pinned ? 'Unpin' : 'Pin for yourself'} onClick={() => onPin(pinned ? null : p.participantId)}>
          <Icon name="pin" />
        </button>
      )}
      <figcaption>
        {!micOn && (
          <span class="badge" role="img" title="Microphone off" aria-label="Microphone off">
            <Icon name="mic" off />
          </span>
        )}
        {p.handRaisedAt && (
          <span class="badge hand" role="img" title="Hand raised" aria-label="Hand raised">
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

export type StageState = Pick<State, 'roster' | 'participantId' | 'sources' | 'activeSpeaker' | 'quality' | 'spotlight' | 'pinned' | 'layoutMode' | 'page' | 'pages' | 'speakers' | 'audioOnly' | 'session'>;

export interface StageActions {
  pin(participantId: string | null): void;
  setPage(page: number): void;
  /** The stage laid out this page of that many. */
  paged(page: number, pages: number): void;
  /** Open the people list (the strip's "more"). */
  showPeople(): void;
}

/** How many names the strip shows before "N more". */
const STRIP_NAMES = 12;

export function Stage({ room: s, remote, own, act }: { room: StageState; remote: RemoteTrack[]; own: OwnMedia; act: StageActions }) {
  const [stageRef, stage] = useSize<HTMLElement>();
  const [gridRef, grid] = useSize<HTMLDivElement>();
  const me = s.participantId;
  const kind = s.session?.meeting.kind;
  const screenTrack = remote.find((r) => r.source === 'screen' && !r.paused);
  const remoteCamera = (id: string) => remote.find((r) => r.participantId === id && r.source === 'camera' && !r.paused);
  const hasVideo = (id: string) => (id === me ? own.camera !== null : s.sources[id]?.camera === 'on');
  const base = { roster: s.roster, me, hasVideo, screen: screenTrack?.participantId ?? null, spotlight: s.spotlight, pinned: s.pinned, speakers: s.speakers, activeSpeaker: s.activeSpeaker, mode: s.layoutMode, page: s.page };
  // the page size depends on whether there is a focus: lay out once to know, then with the size that fits
  const probe = layout({ ...base, pageSize: 1 });
  // beside a focus on a laptop: as many thumbnails as the column holds
  const column = probe.focus !== null && pageSize(stage.width, stage.height, true) > 3 && grid.width < stage.width / 2;
  const L = layout({ ...base, pageSize: column ? thumbnailsFit(grid.width, grid.height, GAP) : pageSize(stage.width, stage.height, probe.focus !== null) });

  useEffect(() => {
    if (stage.width > 0 && (L.page !== s.page || L.pages !== s.pages)) act.paged(L.page, L.pages);
  }, [L.page, L.pages, s.page, s.pages, stage.width]);

  const byId = new Map(s.roster.map((p) => [p.participantId, p]));
  const videoOf = (id: string): MediaStreamTrack | null => {
    if (s.audioOnly) return null;
    if (id === me) return own.camera;
    return remoteCamera(id)?.track ?? null;
  };
  const tile = (id: string, big = false) => {
    const p = byId.get(id)!;
    const mine = id === me;
    return (
      <Tile
        key={id}
        p={p}
        me={mine}
        micOn={mine ? own.micOn : s.sources[id]?.mic === 'on'}
        video={videoOf(id)}
        speaking={s.activeSpeaker === id}
        quality={s.quality[id]}
        tag={roleTag(p, kind)}
        pinned={s.pinned === id}
        spotlit={s.spotlight === id}
        big={big}
        onPin={act.pin}
      />
    );
  };

  const sharer = (f: Focus) => byId.get(f.participantId)?.name ?? 'Someone';
  const cells = gridFor(L.tiles.length, grid.width, grid.height, GAP, tallestTile(grid.width, grid.height));
  const gridStyle = L.focus || cells.tileWidth === 0 ? undefined : { gridTemplateColumns: `repeat(${cells.columns}, ${cells.tileWidth}px)`, gridAutoRows: `${cells.tileHeight}px` };
  const stripPeople = L.strip.map((id) => byId.get(id)!).filter(Boolean);
  return (
    <main ref={stageRef} class={`stage${L.focus ? ' focused' : ''}${L.focus?.source === 'screen' ? ' presenting' : ''}${s.audioOnly ? ' audio-only' : ''}`} aria-label="Stage">
      <div class="stage-main">
        {L.focus?.source === 'screen' && (
          <figure class="tile screen" aria-label={`${sharer(L.focus)} is presenting`} data-view-participant={L.focus.participantId} data-view-source="screen">
            {s.audioOnly ? <p class="audio-only-note">{sharer(L.focus)} is presenting. Video is off (audio only).</p> : <TrackVideo track={screenTrack!.track} label={`${sharer(L.focus)}'s screen`} />}
            <figcaption>
              <span class="name">{sharer(L.focus)} is presenting</span>
            </figcaption>
          </figure>
        )}
        {L.focus?.source === 'camera' && <div class="focus">{tile(L.focus.participantId, true)}</div>}
        <div ref={gridRef} class={L.focus ? 'thumbs' : gridStyle ? 'grid sized' : 'grid'} style={gridStyle} role={L.pages > 1 ? 'group' : undefined} aria-label={L.pages > 1 ? `Page ${L.page} of ${L.pages}` : undefined}>
          {L.tiles.map((id) => tile(id))}
        </div>
      </div>
      {(L.pages > 1 || stripPeople.length > 0) && (
        <div class="stage-foot">
          {L.pages > 1 && (
            <nav class="pager" aria-label="Pages of people">
              <button class="btn small" aria-label="Previous page" disabled={L.page <= 1} onClick={() => act.setPage(L.page - 1)}>
                ‹
              </button>
              <span class="small" id="page">
                {L.page} / {L.pages}
              </span>
              <button class="btn small" aria-label="Next page" disabled={L.page >= L.pages} onClick={() => act.setPage(L.page + 1)}>
                ›
              </button>
            </nav>
          )}
          {stripPeople.length > 0 && (
            <ul class="strip" aria-label="Others in the room">
              {stripPeople.slice(0, STRIP_NAMES).map((p) => (
                <li key={p.participantId} class={`chip${s.activeSpeaker === p.participantId ? ' speaking' : ''}`}>
                  {p.handRaisedAt && (
                    <span class="hand" role="img" aria-label="Hand raised">
                      <Icon name="hand" />
                    </span>
                  )}
                  {p.name}
                  {p.participantId === me ? ' (you)' : ''}
                </li>
              ))}
              {stripPeople.length > STRIP_NAMES && (
                <li>
                  <button class="btn small chip-more" onClick={() => act.showPeople()}>
                    {stripPeople.length - STRIP_NAMES} more
                  </button>
                </li>
              )}
            </ul>
          )}
        </div>
      )}
      {remote
        .filter((r) => r.kind === 'audio')
        .map((r) => (
          <TrackAudio key={r.consumerId} track={r.track} />
        ))}
    </main>
  );
}
