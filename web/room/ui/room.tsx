import { useEffect, useState } from 'preact/hooks';
import type { RoomController } from '../controller.ts';
import type { RemoteTrack } from '../media.ts';
import type { ProducerPauseReason } from '../../../src/core/room-protocol.ts';
import { access, me as meOf, type State } from '../reducer.ts';
import { Controls, type PanelName } from './controls.tsx';
import { People } from './people.tsx';
import { PollsPanel } from './polls.tsx';
import { QuestionsPanel } from './questions.tsx';
import { Quality, Stage } from './stage.tsx';

/** What the room shows of the media objects: the tracks received, why the server holds this person's microphone, and their own camera. */
export interface RoomMedia {
  remote: RemoteTrack[];
  micHeld: ProducerPauseReason | undefined;
  camera: MediaStreamTrack | null;
}

/** The controller's methods the room's views call (and nothing else of it). */
export type RoomActions = Pick<
  RoomController,
  | 'clearNotice'
  | 'askToUnmute'
  | 'command'
  | 'admitAll'
  | 'toggleMic'
  | 'toggleCamera'
  | 'toggleScreen'
  | 'raiseHand'
  | 'leave'
  | 'endForEveryone'
  | 'openPoll'
  | 'answerPoll'
  | 'closePoll'
  | 'sharePoll'
  | 'askQuestion'
  | 'upvoteQuestion'
  | 'answerQuestion'
  | 'dismissQuestion'
>;

/** The room: the top bar, the connection and mute banners, the stage with a side panel, notices, and the controls. */
export function Room({ state: s, media, act }: { state: State; media: RoomMedia; act: RoomActions }) {
  const [panel, setPanel] = useState<PanelName | null>(null);
  const toggle = (name: PanelName) => setPanel(panel === name ? null : name);
  const may = access(s);
  const me = meOf(s);
  const openPoll = s.polls.find((p) => p.status === 'OPEN');
  const locked = !!me?.micLocked && !s.unmuteAllowed;
  const held = media.micHeld;
  useEffect(() => {
    if (!s.notice) return;
    const t = setTimeout(() => act.clearNotice(), 6000);
    return () => clearTimeout(t);
  }, [s.notice]);
  return (
    <div class="room">
      <header class="topbar">
        <h1 id="title">{s.session!.meeting.title}</h1>
        <span class="muted small" id="count">
          {s.roster.length} {s.roster.length === 1 ? 'person' : 'people'}
        </span>
        {s.roomLocked && (
          <span class="lock-tag" id="locked" title="Nobody new can join until a host unlocks the meeting">
            Locked
          </span>
        )}
        {me && <Quality value={s.quality[me.participantId]} />}
      </header>
      {s.phase !== 'room' && (
        <div class="banner" role="status" id="connection">
          {s.phase === 'reconnecting' ? 'Reconnecting…' : 'Connecting…'}
        </div>
      )}
      {(locked || held === 'floor') && (
        <div class="banner warn" role="status" id="muted-banner">
          {held === 'floor' && !locked ? 'Only hosts speak in this lecture. Ask to unmute to speak.' : 'A host muted your microphone.'}
          {!s.askedToUnmute ? (
            <button class="btn small" onClick={() => void act.askToUnmute()}>
              Ask to unmute
            </button>
          ) : (
            <span class="small"> Asked; waiting for a host.</span>
          )}
        </div>
      )}
      <div class="body">
        <Stage room={s} remote={media.remote} own={{ camera: s.camOn ? media.camera : null, micOn: s.micOn && held === undefined }} />
        {panel === 'people' && <People room={s} role={may.role} act={act} onClose={() => setPanel(null)} />}
        {panel === 'polls' && <PollsPanel classroom={s} host={may.host} act={act} onClose={() => setPanel(null)} />}
        {panel === 'qa' && <QuestionsPanel classroom={s} host={may.host} act={act} onClose={() => setPanel(null)} />}
      </div>
      <div class="toast" role="status" aria-live="polite" id="notice">
        {s.notice && <span>{s.notice}</span>}
      </div>
      <Controls
        media={s}
        may={may}
        handUp={!!me?.handRaisedAt}
        counts={{
          waiting: may.host ? s.waitingList.length : 0,
          pollWaiting: !may.host && openPoll !== undefined && !s.answers[openPoll.pollId],
          openQuestions: s.questions.filter((q) => q.status === 'OPEN').length,
        }}
        panel={panel}
        onPanel={toggle}
        act={act}
      />
    </div>
  );
}
