import { useEffect, useRef, useState } from 'preact/hooks';
import type { Session } from '../api.ts';
import type { RoomController } from '../controller.ts';
import type { Devices } from '../devices.ts';
import { checkPaths, pathSummary, type PathResult, type PathResults } from '../path-check.ts';
import { Avatar, Toggle } from './common.tsx';

/** Pre-join: the camera preview, the microphone's level, the choice of devices, and the Join button. */

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

const PATH_LABEL = { udp: 'UDP', tcp: 'TCP', relay: 'Relay' } as const;
const RESULT_LABEL: Record<PathResult, string> = { checking: 'checking', ok: 'works', blocked: 'blocked', none: 'not available' };

/** Which paths to the class's media server this network allows (path-check.ts), as Meet and Zoom show before joining. */
function NetworkCheck({ session }: { session: Session }) {
  const [r, setR] = useState<PathResults | null>(null);
  useEffect(() => {
    let live = true;
    void checkPaths(session, (x) => live && setR(x)).catch(() => {});
    return () => {
      live = false;
    };
  }, [session.accessToken]);
  if (!r) return null;
  const summary = pathSummary(r);
  return (
    <div class={`network-check ${summary.level}`} id="network-check" role="status" aria-live="polite">
      <p>{summary.text}</p>
      <ul class="small">
        {(['udp', 'tcp', 'relay'] as const).map((k) => (
          <li key={k} data-path={k} data-result={r[k]}>
            {PATH_LABEL[k]}: {RESULT_LABEL[r[k]]}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function PreJoin({
  session: s,
  devices: d,
  micOn,
  camOn,
  send,
  act,
}: {
  session: Session;
  devices: Devices;
  micOn: boolean;
  camOn: boolean;
  /** The role sends audio and video (a VIEWER does not, and is not asked for devices). */
  send: boolean;
  act: Pick<RoomController, 'chooseDevice' | 'preset' | 'join'>;
}) {
  const waiting = !s.mediaToken;
  return (
    <main class="center">
      <section class="card wide prejoin">
        <p class="eyebrow">{s.meeting.kind === 'CLASS' ? 'Live class' : 'Meeting'}</p>
        <h1 id="title">{s.meeting.title}</h1>
        {s.meeting.settings.recordAutomatically && (
          <p class="note rec-note" role="note" id="recorded-note">
            <span class="rec-dot" aria-hidden="true" /> This {s.meeting.kind === 'CLASS' ? 'class' : 'meeting'} is recorded.
          </p>
        )}
        {send && <Preview stream={d.stream} on={camOn} name={s.user.displayName} />}
        {send && <MicMeter stream={d.stream} on={micOn} />}
        {!send && <p class="muted">You join as a viewer: you see and hear the class, and do not send audio or video.</p>}
        {d.denied && send && (
          <p class="note" role="note">
            No camera or microphone is available (or they were not allowed). You can still join and listen.
          </p>
        )}
        {send && !d.denied && (
          <div class="devices">
            <label>
              Microphone
              <select value={d.micId ?? ''} onChange={(e) => act.chooseDevice('mic', (e.target as HTMLSelectElement).value)}>
                {d.mics.map((m, i) => (
                  <option value={m.deviceId}>{m.label || `Microphone ${i + 1}`}</option>
                ))}
              </select>
            </label>
            <label>
              Camera
              <select value={d.camId ?? ''} onChange={(e) => act.chooseDevice('cam', (e.target as HTMLSelectElement).value)}>
                {d.cams.map((m, i) => (
                  <option value={m.deviceId}>{m.label || `Camera ${i + 1}`}</option>
                ))}
              </select>
            </label>
          </div>
        )}
        {send && !d.denied && (
          <div class="toggles">
            <Toggle label="Microphone" on={micOn} onClick={() => act.preset('mic', !micOn)} icon="mic" />
            <Toggle label="Camera" on={camOn} onClick={() => act.preset('cam', !camOn)} icon="cam" />
          </div>
        )}
        <NetworkCheck session={s} />
        <p class="muted">
          Joining as <strong id="display-name">{s.user.displayName}</strong>
        </p>
        <button id="join" class="btn primary big" onClick={() => void act.join()}>
          {waiting ? 'Ask to join' : 'Join now'}
        </button>
      </section>
    </main>
  );
}
