import { useEffect, useRef, useState } from 'preact/hooks';
import type { RoomController } from '../controller.ts';
import type { RemoteTrack } from '../media.ts';
import type { ProducerPauseReason } from '../../../src/core/room-protocol.ts';
import { SHORTCUTS, shortcutOf } from '../shortcuts.ts';
import { access, me as meOf, MEDIA_ERROR_TEXT, type State } from '../reducer.ts';
import { Icon } from './common.tsx';
import { Controls, type PanelName } from './controls.tsx';
import { People } from './people.tsx';
import { PollsPanel } from './polls.tsx';
import { QuestionsPanel } from './questions.tsx';
import { ChatPanel } from './chat.tsx';
import { Alerts } from './alerts.tsx';
import { FloatingReactions, ReactionRow } from './reactions.tsx';
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
  | 'setCaptions'
  | 'dismissCaptions'
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
  | 'pin'
  | 'setLayout'
  | 'setPage'
  | 'paged'
  | 'setAudioOnly'
  | 'declineAudioOnly'
  | 'sendChat'
  | 'deleteChat'
  | 'chatSettings'
  | 'readChat'
  | 'react'
  | 'allowUnmuteAll'
  | 'lowerHandOf'
  | 'admit'
  | 'unlock'
  | 'dismissAlert'
  | 'pollPrompted'
  | 'setChime'
  | 'chimeOn'
  | 'record'
  | 'pauseRecording'
>;

/** The room: the top bar, the connection and mute banners, the stage with a side panel, notices, and the controls. */
export function Room({ state: s, media, act }: { state: State; media: RoomMedia; act: RoomActions }) {
  const [panel, setPanel] = useState<PanelName | null>(null);
  const toggle = (name: PanelName) => setPanel(panel === name ? null : name);
  const [reacting, setReacting] = useState(false);
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
  // a poll that opens pops up for students (once; they may close it and come back to it)
  useEffect(() => {
    if (!s.pollPrompt) return;
    setPanel('polls');
    act.pollPrompted();
  }, [s.pollPrompt]);
  const help = useRef<HTMLDialogElement>(null);
  // the keyboard shortcuts (shortcuts.ts): read the state when the key comes, not when the listener was made
  const now = useRef({ may, handUp: !!me?.handRaisedAt });
  now.current = { may, handUp: !!me?.handRaisedAt };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const action = shortcutOf(e, e.target as HTMLElement | null);
      if (!action || help.current?.open) return;
      const { may: m, handUp } = now.current;
      if ((action === 'mic' || action === 'camera') && !m.send) return;
      e.preventDefault();
      if (action === 'mic') void act.toggleMic();
      else if (action === 'camera') void act.toggleCamera();
      else if (action === 'hand') void act.raiseHand(!handUp);
      else help.current?.showModal();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="room">
      <header class="topbar">
        <h1 id="title">{s.session!.meeting.title}</h1>
        <span class="muted small" id="count">
          {s.roster.length} {s.roster.length === 1 ? 'person' : 'people'}
        </span>
        {s.recording && (
          <span class={`rec-tag${s.recording.paused ? ' paused' : ''}`} id="recording">
            <span class="rec-dot" aria-hidden="true" />
            <span role="img" aria-label={s.recording.paused ? 'Recording paused' : 'This class is being recorded'}>
              {s.recording.paused ? 'Paused' : 'REC'}
            </span>
            {may.host && (
              <button class="btn small" id="pause-recording" onClick={() => void act.pauseRecording(!s.recording!.paused)}>
                {s.recording.paused ? 'Resume' : 'Pause'}
              </button>
            )}
          </span>
        )}
        {s.roomLocked && (
          <span class="lock-tag" id="locked" title="Nobody new can join until a host unlocks the meeting">
            Locked
          </span>
        )}
        {me && <Quality value={s.quality[me.participantId]} />}
        <span class="view-switch" role="group" aria-label="Layout">
          <button class="btn small" aria-pressed={s.layoutMode === 'grid'} onClick={() => act.setLayout('grid')} title="Everyone in a grid">
            <Icon name="layout" />
            <span class="label">Grid</span>
          </button>
          <button class="btn small" aria-pressed={s.layoutMode === 'speaker'} onClick={() => act.setLayout('speaker')} title="The speaker big, the others beside">
            <Icon name="speaker" />
            <span class="label">Speaker</span>
          </button>
          <button class="btn small" id="audio-only" aria-pressed={s.audioOnly} onClick={() => act.setAudioOnly(!s.audioOnly)} title="Receive no video, to save your connection">
            <Icon name="audio" />
            <span class="label">Audio only</span>
          </button>
        </span>
        <button class="btn small" id="shortcuts" aria-label="Keyboard shortcuts" title="Keyboard shortcuts (?)" onClick={() => help.current?.showModal()}>
          ?
        </button>
      </header>
      {s.phase !== 'room' && (
        <div class="banner" role="status" id="connection">
          {s.phase === 'reconnecting' ? 'Reconnecting…' : 'Connecting…'}
        </div>
      )}
      {s.screenOn && (
        <div class="banner" role="status" id="presenting">
          You are presenting your screen.
          <button class="btn small" aria-label="Stop presenting" onClick={() => void act.toggleScreen()}>
            Stop
          </button>
        </div>
      )}
      {s.mediaError && (
        <div class="banner error" role="alert" id="media-error">
          {MEDIA_ERROR_TEXT[s.mediaError]}
        </div>
      )}
      {s.audioOnlyOffered && (
        <div class="banner warn" role="status" id="audio-only-offer">
          Your connection is poor. Switch to audio only? You will still hear everyone.
          <button class="btn small" onClick={() => act.setAudioOnly(true)}>
            Switch to audio only
          </button>
          <button class="btn small" onClick={() => act.declineAudioOnly()}>
            Not now
          </button>
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
        <Stage
          room={s}
          remote={media.remote}
          own={{ camera: s.camOn ? media.camera : null, micOn: s.micOn && held === undefined }}
          act={{ pin: (id) => act.pin(id), setPage: (page) => act.setPage(page), paged: (page, pages) => act.paged(page, pages), showPeople: () => setPanel('people') }}
        />
        <FloatingReactions room={s} />
        {(s.captions.on || s.captions.unavailable) && (
          <div class="captions" id="captions" role="region" aria-label="Live captions">
            <div aria-live="polite" aria-atomic="false">
              {s.captions.unavailable ? (
                <p class="caption-line unavailable">Captions are not available: {s.captions.unavailable}</p>
              ) : s.captions.lines.length ? (
                s.captions.lines.map((l) => (
                  <p class="caption-line" key={l.key}>
                    <span class="caption-name">{l.name}:</span> {l.text}
                  </p>
                ))
              ) : (
                <p class="caption-line waiting">Captions are on. The speaker's words appear here.</p>
              )}
            </div>
            {s.captions.unavailable && (
              <button class="btn small" onClick={() => act.dismissCaptions()}>
                Close
              </button>
            )}
          </div>
        )}
        {panel === 'people' && <People room={s} role={may.role} act={act} onClose={() => setPanel(null)} />}
        {panel === 'polls' && <PollsPanel classroom={s} host={may.host} act={act} onClose={() => setPanel(null)} />}
        {panel === 'chat' && <ChatPanel room={s} host={may.host} act={act} onClose={() => setPanel(null)} />}
        {panel === 'qa' && <QuestionsPanel classroom={s} host={may.host} act={act} onClose={() => setPanel(null)} />}
      </div>
      <dialog ref={help} class="help" id="help" aria-labelledby="help-title">
        <h2 id="help-title">Keyboard shortcuts</h2>
        <dl>
          {SHORTCUTS.map((k) => (
            <>
              <dt>
                <kbd>{k.key}</kbd>
              </dt>
              <dd>{k.label}</dd>
            </>
          ))}
        </dl>
        <p class="small">They work anywhere in the room except while you type.</p>
        <form method="dialog">
          <button class="btn" autoFocus>
            Close
          </button>
        </form>
      </dialog>
      {reacting && <ReactionRow act={act} onDone={() => setReacting(false)} />}
      {may.host && <Alerts alerts={s.alerts} panel={panel} openPanel={setPanel} act={act} />}
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
          hands: s.roster.filter((p) => p.handRaisedAt).length,
          unreadChat: panel === 'chat' ? 0 : s.chatUnread,
        }}
        panel={panel}
        onPanel={toggle}
        reacting={reacting}
        onReact={() => setReacting(!reacting)}
        recording={s.recording !== null}
        captions={s.captions.on}
        captionsOffered={s.captions.offered}
        act={act}
      />
    </div>
  );
}
