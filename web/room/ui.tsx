import { useEffect, useReducer, useRef, useState } from 'preact/hooks';
import type { Participant, RoomController } from './controller.ts';
import type { RemoteTrack } from './media.ts';
import { PollsPanel, QuestionsPanel } from './classroom.tsx';
import { Panel } from './panel.tsx';

/** The views: one per phase, all reading the controller's state and calling its methods. */

function useController(c: RoomController): void {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    const off = c.subscribe(() => rerender(undefined));
    rerender(undefined); // the state may have changed between the first render and this effect
    return off;
  }, [c]);
}

export function App({ c }: { c: RoomController }) {
  useController(c);
  const { phase } = c.state;
  if (phase === 'loading') return <Card title="Joining…" text="Checking your link." busy />;
  if (phase === 'app-choice') return <AppChoice c={c} />;
  if (phase === 'prejoin') return <PreJoin c={c} />;
  if (phase === 'waiting') return <Waiting c={c} />;
  if (phase === 'over' || phase === 'error') return <Over c={c} />;
  return <Room c={c} />;
}

function Card({ title, text, busy, children }: { title: string; text?: string; busy?: boolean; children?: any }) {
  return (
    <main class="center">
      <section class="card" aria-busy={busy ? 'true' : undefined}>
        {busy && <div class="spinner" aria-hidden="true" />}
        <h1 id="title">{title}</h1>
        {text && (
          <p id="status" class="muted">
            {text}
          </p>
        )}
        {children}
      </section>
    </main>
  );
}

/**
 * The organization's app or the browser. Offered only for an app the organization configured, and its
 * link opens only that app (controller.ts, AppOffer); the link works once, in one or the other.
 */
function AppChoice({ c }: { c: RoomController }) {
  const offer = c.state.appOffer;
  if (!offer) return <Card title="Joining…" text="Checking your link." busy />;
  const open = (label: string, primary: boolean) => (
    <a id="open-app" class={primary ? 'btn primary' : 'btn'} href={offer.href}>
      {label}
    </a>
  );
  const browser = (primary: boolean) => (
    <button id="continue-browser" class={primary ? 'btn primary' : 'btn'} onClick={() => void c.continueInBrowser()}>
      Continue in the browser
    </button>
  );
  if (offer.step === 'missing') {
    return (
      <Card title="The app did not open" text="It may not be installed on this phone. Continue here in the browser, or install the app and try again.">
        <div class="stack">
          {browser(true)}
          {open('Try the app again', false)}
        </div>
      </Card>
    );
  }
  return (
    <Card
      title="Join the meeting"
      text={
        offer.step === 'legacy'
          ? 'The app did not take the meeting link. Try opening the app once more, or continue here in the browser.'
          : 'Open it in the app, or continue here in the browser. The link works once: in one or the other.'
      }
    >
      <div class="stack">
        {open('Open in the app', true)}
        {browser(false)}
      </div>
    </Card>
  );
}

// ---- pre-join ---------------------------------------------------------------------------------------------

function Preview({ stream, on, name }: { stream: MediaStream | null; on: boolean; name: string }) {
  const ref = useRef<HTMLVideoElement>(null);
  useEffect(() => {
    if (ref.current) ref.current.srcObject = stream;
  }, [stream]);
  return (
    <div class="preview">
      <video ref={ref} autoPlay playsInline muted class={on && stream ? 'mirror' : 'hidden'} aria-label="Your camera preview" />
      {!(on && stream) && <Avatar name={name} />}
    </div>
  );
}

function MicMeter({ stream, on }: { stream: MediaStream | null; on: boolean }) {
  const [level, setLevel] = useState(0);
  useEffect(() => {
    const track = stream?.getAudioTracks()[0];
    if (!track || !on) {
      setLevel(0);
      return;
    }
    const ctx = new AudioContext();
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 512;
    ctx.createMediaStreamSource(new MediaStream([track])).connect(analyser);
    const data = new Uint8Array(analyser.fftSize);
    let raf = 0;
    const tick = () => {
      analyser.getByteTimeDomainData(data);
      let peak = 0;
      for (const v of data) peak = Math.max(peak, Math.abs(v - 128));
      setLevel(Math.min(1, peak / 64));
      raf = requestAnimationFrame(tick);
    };
    tick();
    return () => {
      cancelAnimationFrame(raf);
      void ctx.close();
    };
  }, [stream, on]);
  return (
    <div class="meter" role="meter" aria-label="Microphone level" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(level * 100)}>
      <div style={{ transform: `scaleX(${level})` }} />
    </div>
  );
}

function PreJoin({ c }: { c: RoomController }) {
  const s = c.state.session!;
  const d = c.devices;
  const viewer = s.role === 'VIEWER';
  const waiting = !s.mediaToken;
  return (
    <main class="center">
      <section class="card wide prejoin">
        <p class="eyebrow">{s.meeting.kind === 'CLASS' ? 'Live class' : 'Meeting'}</p>
        <h1 id="title">{s.meeting.title}</h1>
        {!viewer && <Preview stream={d.stream} on={c.state.camOn} name={s.user.displayName} />}
        {!viewer && <MicMeter stream={d.stream} on={c.state.micOn} />}
        {viewer && <p class="muted">You join as a viewer: you see and hear the class, and do not send audio or video.</p>}
        {d.denied && !viewer && (
          <p class="note" role="note">
            No camera or microphone is available (or they were not allowed). You can still join and listen.
          </p>
        )}
        {!viewer && !d.denied && (
          <div class="devices">
            <label>
              Microphone
              <select value={d.micId ?? ''} onChange={(e) => c.chooseDevice('mic', (e.target as HTMLSelectElement).value)}>
                {d.mics.map((m, i) => (
                  <option value={m.deviceId}>{m.label || `Microphone ${i + 1}`}</option>
                ))}
              </select>
            </label>
            <label>
              Camera
              <select value={d.camId ?? ''} onChange={(e) => c.chooseDevice('cam', (e.target as HTMLSelectElement).value)}>
                {d.cams.map((m, i) => (
                  <option value={m.deviceId}>{m.label || `Camera ${i + 1}`}</option>
                ))}
              </select>
            </label>
          </div>
        )}
        {!viewer && !d.denied && (
          <div class="toggles">
            <Toggle label="Microphone" on={c.state.micOn} onClick={() => c.preset('mic', !c.state.micOn)} icon="mic" />
            <Toggle label="Camera" on={c.state.camOn} onClick={() => c.preset('cam', !c.state.camOn)} icon="cam" />
          </div>
        )}
        <p class="muted">
          Joining as <strong id="display-name">{s.user.displayName}</strong>
        </p>
        <button id="join" class="btn primary big" onClick={() => void c.join()}>
          {waiting ? 'Ask to join' : 'Join now'}
        </button>
      </section>
    </main>
  );
}

// ---- waiting ------------------------------------------------------------------------------------------------

function Waiting({ c }: { c: RoomController }) {
  const s = c.state.session!;
  return (
    <Card title="Waiting for a host to let you in…" busy>
      <p id="status" class="muted">
        {s.meeting.title}. You will join automatically when a host admits you; keep this page open.
      </p>
      <button class="btn" onClick={() => void c.leave()}>
        Leave
      </button>
    </Card>
  );
}

// ---- over -----------------------------------------------------------------------------------------------------

function Over({ c }: { c: RoomController }) {
  const o = c.state.outcome!;
  const url = c.state.session?.redirectUrl;
  return (
    <Card title={o.title} text={o.text}>
      {c.state.redirectAt && url && (
        <p class="muted">
          Taking you back in a few seconds… <a href={url}>Continue now</a>
        </p>
      )}
    </Card>
  );
}

// ---- the room ---------------------------------------------------------------------------------------------------

const ICONS: Record<string, string> = {
  mic: 'M12 14a3 3 0 0 0 3-3V5a3 3 0 0 0-6 0v6a3 3 0 0 0 3 3zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.9V21h2v-3.1a7 7 0 0 0 6-6.9h-2z',
  cam: 'M17 10.5V7a1 1 0 0 0-1-1H4a1 1 0 0 0-1 1v10a1 1 0 0 0 1 1h12a1 1 0 0 0 1-1v-3.5l4 4v-11l-4 4z',
  screen: 'M20 18a2 2 0 0 0 2-2V6a2 2 0 0 0-2-2H4a2 2 0 0 0-2 2v10a2 2 0 0 0 2 2H0v2h24v-2h-4zM4 6h16v10H4V6z',
  hand: 'M13 24c-3.3 0-6-2.7-6-6V7.5a1.5 1.5 0 0 1 3 0V12h1V3.5a1.5 1.5 0 0 1 3 0V12h1V5a1.5 1.5 0 0 1 3 0v8h1V8a1.5 1.5 0 0 1 3 0v10c0 3.3-2.7 6-6 6h-3z',
  people: 'M16 11a3 3 0 1 0 0-6 3 3 0 0 0 0 6zm-8 0a3 3 0 1 0 0-6 3 3 0 0 0 0 6zm0 2c-2.3 0-7 1.2-7 3.5V19h14v-2.5C15 14.2 10.3 13 8 13zm8 0h-1c1.2.9 2 2 2 3.5V19h6v-2.5c0-2.3-4.7-3.5-7-3.5z',
  poll: 'M4 20h4V10H4v10zm6 0h4V4h-4v16zm6 0h4v-7h-4v7z',
  qa: 'M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2zm7 9v2h2v-2h-2zm1-7a3 3 0 0 0-3 3h2a1 1 0 1 1 1 1 1 1 0 0 0-1 1v1h2v-.3A3 3 0 0 0 12 6z',
  leave: 'M10 17l1.4-1.4L8.8 13H20v-2H8.8l2.6-2.6L10 7l-5 5 5 5zM4 5h8V3H4a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h8v-2H4V5z',
};

function Icon({ name, off }: { name: string; off?: boolean }) {
  return (
    <svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true">
      <path d={ICONS[name]} fill="currentColor" />
      {off && <path d="M3 3l18 18" stroke="currentColor" stroke-width="2.2" stroke-linecap="round" />}
    </svg>
  );
}

function Toggle({ label, on, onClick, icon, disabled }: { label: string; on: boolean; onClick: () => void; icon: string; disabled?: boolean }) {
  return (
    <button class={`ctl ${on ? 'on' : icon === 'mic' || icon === 'cam' ? 'off' : ''}`} aria-pressed={on} aria-label={label} title={label} onClick={onClick} disabled={disabled}>
      <Icon name={icon} off={!on && (icon === 'mic' || icon === 'cam')} />
      <span class="ctl-label">{label}</span>
    </button>
  );
}

function Avatar({ name }: { name: string }) {
  const initials = name
    .split(/\s+/)
    .filter(Boolean)
    .slice(0, 2)
    .map((w) => w[0]!.toUpperCase())
    .join('');
  return (
    <div class="avatar" aria-hidden="true">
      {initials || '?'}
    </div>
  );
}

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

function Quality({ value }: { value: number | undefined }) {
  if (value === undefined) return null;
  return (
    <span class={`quality q${value}`} role="img" aria-label={QUALITY[value]} title={QUALITY[value]}>
      {[1, 2, 3, 4].map((b) => (
        <i class={value >= b + 1 ? 'lit' : ''} style={{ height: `${4 + b * 3}px` }} />
      ))}
    </span>
  );
}

const ROLE_LABEL: Record<string, string> = { HOST: 'Host', COHOST: 'Co-host', PARTICIPANT: 'Participant', VIEWER: 'Viewer' };

function Tile({ c, p, video, main }: { c: RoomController; p: Participant; video: RemoteTrack | MediaStreamTrack | null; main?: boolean }) {
  const me = p.participantId === c.state.participantId;
  const src = c.state.sources[p.participantId] ?? {};
  const micOn = me ? c.state.micOn && !c.media?.heldByServer.has('mic') : src.mic === 'on';
  const track = video instanceof MediaStreamTrack ? video : video && !video.paused ? video.track : null;
  const speaking = c.state.activeSpeaker === p.participantId;
  return (
    <figure class={`tile${speaking ? ' speaking' : ''}${main ? ' main' : ''}${p.connected ? '' : ' away'}`} aria-label={`${p.name}${me ? ' (you)' : ''}`}>
      {track ? <TrackVideo track={track} mirror={me && !main} label={`${p.name}'s video`} /> : <Avatar name={p.name} />}
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
        <Quality value={c.state.quality[p.participantId]} />
      </figcaption>
    </figure>
  );
}

function Stage({ c }: { c: RoomController }) {
  const remote = [...(c.media?.remote.values() ?? [])];
  const people = c.state.roster.filter((p) => p.connected || p.participantId === c.state.participantId);
  const cameraOf = (p: Participant): RemoteTrack | MediaStreamTrack | null => {
    if (p.participantId === c.state.participantId) {
      const t = c.devices.stream?.getVideoTracks()[0];
      return t && c.state.camOn ? t : null;
    }
    return remote.find((r) => r.participantId === p.participantId && r.source === 'camera') ?? null;
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
        {people.map((p) => (
          <Tile key={p.participantId} c={c} p={p} video={cameraOf(p)} />
        ))}
      </div>
      {remote
        .filter((r) => r.kind === 'audio')
        .map((r) => (
          <TrackAudio key={r.consumerId} track={r.track} />
        ))}
    </div>
  );
}

function People({ c, onClose }: { c: RoomController; onClose: () => void }) {
  const host = c.isHost;
  const sorted = [...c.state.roster].sort((a, b) => (a.handRaisedAt && b.handRaisedAt ? a.handRaisedAt.localeCompare(b.handRaisedAt) : a.handRaisedAt ? -1 : b.handRaisedAt ? 1 : a.joinedAt.localeCompare(b.joinedAt)));
  const hands = sorted.filter((p) => p.handRaisedAt);
  return (
    <Panel label="People" title={`People (${c.state.roster.length})`} control="People" onClose={onClose}>
      {host && c.state.waitingList.length > 0 && (
        <section aria-label="Waiting room" class="waiting-list">
          <h3>Waiting to join ({c.state.waitingList.length})</h3>
          <ul>
            {c.state.waitingList.map((e) => (
              <li key={e.queueId}>
                <span class="name">{e.name}</span>
                <span class="actions">
                  <button class="btn small primary" aria-label={`Admit ${e.name}`} onClick={() => void c.command({ type: 'admit', queueId: e.queueId })}>
                    Admit
                  </button>
                  <button class="btn small" aria-label={`Deny ${e.name}`} onClick={() => void c.command({ type: 'deny', queueId: e.queueId })}>
                    Deny
                  </button>
                </span>
              </li>
            ))}
          </ul>
          {c.state.waitingList.length > 1 && (
            <button class="btn small" onClick={() => void c.admitAll()}>
              Admit all
            </button>
          )}
        </section>
      )}
      {host && (
        <div class="row-actions">
          <button class="btn small" onClick={() => void c.command({ type: 'mute-all' })}>
            Mute all
          </button>
          {hands.length > 0 && (
            <button class="btn small" onClick={() => void c.command({ type: 'lower-all-hands' })}>
              Lower all hands
            </button>
          )}
          <button class="btn small" id="lock" aria-pressed={c.state.roomLocked} onClick={() => void c.command({ type: 'lock', locked: !c.state.roomLocked })}>
            {c.state.roomLocked ? 'Unlock meeting' : 'Lock meeting'}
          </button>
        </div>
      )}
      <ul class="roster">
        {sorted.map((p) => {
          const me = p.participantId === c.state.participantId;
          const src = c.state.sources[p.participantId] ?? {};
          const canManage = host && !me && !(c.role === 'COHOST' && p.roomRole === 'HOST');
          return (
            <li key={p.participantId} class={p.connected ? '' : 'away'}>
              <Avatar name={p.name} />
              <div class="who">
                <span class="name">
                  {p.name}
                  {me ? ' (you)' : ''}
                </span>
                <span class="muted small">
                  {ROLE_LABEL[p.roomRole]}
                  {p.connected ? '' : ' · reconnecting'}
                  {p.askedToUnmute ? ' · asks to unmute' : ''}
                </span>
              </div>
              <span class="states">
                {p.handRaisedAt && (
                  <span title="Hand raised" aria-label="Hand raised" class="hand">
                    <Icon name="hand" />
                  </span>
                )}
                <span aria-label={src.mic === 'on' ? 'Microphone on' : 'Microphone off'} title={src.mic === 'on' ? 'Microphone on' : 'Microphone off'}>
                  <Icon name="mic" off={src.mic !== 'on'} />
                </span>
                <span aria-label={src.camera === 'on' ? 'Camera on' : 'Camera off'} title={src.camera === 'on' ? 'Camera on' : 'Camera off'}>
                  <Icon name="cam" off={src.camera !== 'on'} />
                </span>
              </span>
              {canManage && (
                <span class="actions">
                  {p.handRaisedAt && (
                    <button class="btn small" aria-label={`Lower ${p.name}'s hand`} onClick={() => void c.command({ type: 'lower-hand', participantId: p.participantId })}>
                      Lower hand
                    </button>
                  )}
                  {p.micLocked || p.askedToUnmute ? (
                    <button class="btn small" aria-label={`Allow ${p.name} to unmute`} onClick={() => void c.command({ type: 'allow-unmute', participantId: p.participantId })}>
                      Allow unmute
                    </button>
                  ) : (
                    <button class="btn small" aria-label={`Mute ${p.name}`} onClick={() => void c.command({ type: 'mute', participantId: p.participantId })}>
                      Mute
                    </button>
                  )}
                  <button class="btn small danger" aria-label={`Remove ${p.name}`} onClick={() => confirm(`Remove ${p.name} from the meeting?`) && void c.command({ type: 'remove', participantId: p.participantId })}>
                    Remove
                  </button>
                </span>
              )}
            </li>
          );
        })}
      </ul>
    </Panel>
  );
}

type PanelName = 'people' | 'polls' | 'qa';

function Room({ c }: { c: RoomController }) {
  const [panel, setPanel] = useState<PanelName | null>(null);
  const toggle = (name: PanelName) => setPanel(panel === name ? null : name);
  const openPoll = c.state.polls.find((p) => p.status === 'OPEN');
  const pollWaiting = !c.isHost && openPoll !== undefined && !c.state.answers[openPoll.pollId];
  const openQuestions = c.state.questions.filter((q) => q.status === 'OPEN').length;
  const s = c.state.session!;
  const me = c.me;
  const held = c.media?.heldByServer.get('mic');
  const locked = !!me?.micLocked && !c.state.unmuteAllowed;
  const waiting = c.isHost ? c.state.waitingList.length : 0;
  useEffect(() => {
    if (!c.state.notice) return;
    const t = setTimeout(() => c.clearNotice(), 6000);
    return () => clearTimeout(t);
  }, [c.state.notice]);
  return (
    <div class="room">
      <header class="topbar">
        <h1 id="title">{s.meeting.title}</h1>
        <span class="muted small" id="count">
          {c.state.roster.length} {c.state.roster.length === 1 ? 'person' : 'people'}
        </span>
        {c.state.roomLocked && (
          <span class="lock-tag" id="locked" title="Nobody new can join until a host unlocks the meeting">
            Locked
          </span>
        )}
        {me && <Quality value={c.state.quality[me.participantId]} />}
      </header>
      {c.state.phase !== 'room' && (
        <div class="banner" role="status" id="connection">
          {c.state.phase === 'reconnecting' ? 'Reconnecting…' : 'Connecting…'}
        </div>
      )}
      {(locked || held === 'floor') && (
        <div class="banner warn" role="status" id="muted-banner">
          {held === 'floor' && !locked ? 'Only hosts speak in this lecture. Ask to unmute to speak.' : 'A host muted your microphone.'}
          {!c.state.askedToUnmute ? (
            <button class="btn small" onClick={() => void c.askToUnmute()}>
              Ask to unmute
            </button>
          ) : (
            <span class="small"> Asked; waiting for a host.</span>
          )}
        </div>
      )}
      <div class="body">
        <Stage c={c} />
        {panel === 'people' && <People c={c} onClose={() => setPanel(null)} />}
        {panel === 'polls' && <PollsPanel c={c} onClose={() => setPanel(null)} />}
        {panel === 'qa' && <QuestionsPanel c={c} onClose={() => setPanel(null)} />}
      </div>
      <div class="toast" role="status" aria-live="polite" id="notice">
        {c.state.notice && <span>{c.state.notice}</span>}
      </div>
      <nav class="controls" aria-label="Meeting controls">
        {c.canSend && <Toggle label={c.state.micOn ? 'Mute' : 'Unmute'} on={c.state.micOn} icon="mic" onClick={() => void c.toggleMic()} />}
        {c.canSend && <Toggle label={c.state.camOn ? 'Stop video' : 'Start video'} on={c.state.camOn} icon="cam" onClick={() => void c.toggleCamera()} />}
        {c.canShareScreen && <Toggle label={c.state.screenOn ? 'Stop sharing' : 'Share screen'} on={c.state.screenOn} icon="screen" onClick={() => void c.toggleScreen()} />}
        <Toggle label={me?.handRaisedAt ? 'Lower hand' : 'Raise hand'} on={!!me?.handRaisedAt} icon="hand" onClick={() => void c.raiseHand(!me?.handRaisedAt)} />
        <button class={`ctl${panel === 'people' ? ' on' : ''}`} aria-pressed={panel === 'people'} aria-label={`People${waiting ? `, ${waiting} waiting` : ''}`} title="People" onClick={() => toggle('people')}>
          <Icon name="people" />
          <span class="ctl-label">People</span>
          {waiting > 0 && <span class="count">{waiting}</span>}
        </button>
        <button class={`ctl${panel === 'polls' ? ' on' : ''}`} aria-pressed={panel === 'polls'} aria-label={`Polls${pollWaiting ? ', a poll is waiting for your answer' : ''}`} title="Polls" onClick={() => toggle('polls')}>
          <Icon name="poll" />
          <span class="ctl-label">Polls</span>
          {pollWaiting && <span class="count">1</span>}
        </button>
        <button class={`ctl${panel === 'qa' ? ' on' : ''}`} aria-pressed={panel === 'qa'} aria-label={`Q&A${openQuestions ? `, ${openQuestions} open` : ''}`} title="Q&A" onClick={() => toggle('qa')}>
          <Icon name="qa" />
          <span class="ctl-label">Q&amp;A</span>
          {c.isHost && openQuestions > 0 && <span class="count">{openQuestions}</span>}
        </button>
        {c.isHost ? (
          <LeaveMenu c={c} />
        ) : (
          <button class="ctl leave" aria-label="Leave" title="Leave" onClick={() => void c.leave()}>
            <Icon name="leave" />
            <span class="ctl-label">Leave</span>
          </button>
        )}
      </nav>
    </div>
  );
}

/**
 * A host's Leave button opens a menu (leave, or end for everyone), operable as a WAI-ARIA menu button:
 * opening focuses the first item, arrow keys move, Escape or Tab closes it and focus returns to the button;
 * a tap elsewhere closes it.
 */
function LeaveMenu({ c }: { c: RoomController }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);
  const group = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    if (!open) return;
    menu.current?.querySelector<HTMLButtonElement>('[role="menuitem"]')?.focus();
    // a tap or click anywhere else closes it, as any menu
    const outside = (e: PointerEvent) => {
      if (!group.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('pointerdown', outside);
    return () => document.removeEventListener('pointerdown', outside);
  }, [open]);
  const close = (refocus: boolean) => {
    setOpen(false);
    if (refocus) button.current?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    const items = [...(menu.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]') ?? [])];
    const at = items.indexOf(document.activeElement as HTMLButtonElement);
    if (e.key === 'Escape') {
      e.preventDefault();
      close(true);
    } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      items[(at + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length]?.focus();
    } else if (e.key === 'Tab') close(false);
  };
  return (
    <span class="leave-group" ref={group}>
      <button
        ref={button}
        class="ctl leave"
        aria-label="Leave"
        title="Leave"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls="leave-menu"
        onClick={() => setOpen(!open)}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
            e.preventDefault();
            setOpen(true);
          }
        }}
      >
        <Icon name="leave" />
        <span class="ctl-label">Leave</span>
      </button>
      {open && (
        <div class="menu" role="menu" id="leave-menu" aria-label="Leave" ref={menu} onKeyDown={onKey}>
          <button role="menuitem" class="btn" onClick={() => void c.leave()}>
            Leave the meeting
          </button>
          <button role="menuitem" class="btn danger" onClick={() => void c.endForEveryone()}>
            End for everyone
          </button>
        </div>
      )}
    </span>
  );
}
