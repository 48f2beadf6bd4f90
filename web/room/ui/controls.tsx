import type { RoomController } from '../controller.ts';
import type { Access, State } from '../reducer.ts';
import { Icon, Toggle } from './common.tsx';
import { LeaveMenu } from './leave-menu.tsx';

/** The room's control bar: microphone, camera, screen (each only when the role may), hand, the panels, and leaving. */

export type PanelName = 'people' | 'polls' | 'qa';

/** What the panel buttons show as counts. */
export interface Counts {
  /** People waiting to be let in (hosts). */
  waiting: number;
  /** An open poll this person has not answered (not hosts). */
  pollWaiting: boolean;
  /** Open questions (their count shows to hosts). */
  openQuestions: number;
  /** Raised hands (their count shows to hosts on People, beside the waiting). */
  hands: number;
}

/** Whether this browser can share a screen at all (phones' browsers cannot): the button is not offered where it cannot work. */
const canShareScreen = (): boolean => typeof navigator !== 'undefined' && typeof navigator.mediaDevices?.getDisplayMedia === 'function';

export function Controls({
  media: s,
  may,
  handUp,
  counts,
  panel,
  onPanel,
  act,
}: {
  media: Pick<State, 'micOn' | 'camOn' | 'screenOn'>;
  may: Access;
  handUp: boolean;
  counts: Counts;
  panel: PanelName | null;
  onPanel: (name: PanelName) => void;
  act: Pick<RoomController, 'toggleMic' | 'toggleCamera' | 'toggleScreen' | 'raiseHand' | 'leave' | 'endForEveryone'>;
}) {
  const { waiting, pollWaiting, openQuestions } = counts;
  const hands = may.host ? counts.hands : 0;
  const peopleLabel = ['People', waiting ? `${waiting} waiting` : '', hands ? `${hands} ${hands === 1 ? 'hand' : 'hands'} raised` : ''].filter(Boolean).join(', ');
  return (
    <nav class="controls" aria-label="Meeting controls">
      {may.send && <Toggle label={s.micOn ? 'Mute' : 'Unmute'} on={s.micOn} icon="mic" onClick={() => void act.toggleMic()} />}
      {may.send && <Toggle label={s.camOn ? 'Stop video' : 'Start video'} on={s.camOn} icon="cam" onClick={() => void act.toggleCamera()} />}
      {may.shareScreen && canShareScreen() && <Toggle label={s.screenOn ? 'Stop sharing' : 'Share screen'} on={s.screenOn} icon="screen" onClick={() => void act.toggleScreen()} />}
      <Toggle label={handUp ? 'Lower hand' : 'Raise hand'} on={handUp} icon="hand" onClick={() => void act.raiseHand(!handUp)} />
      <button class={`ctl${panel === 'people' ? ' on' : ''}`} aria-pressed={panel === 'people'} aria-label={peopleLabel} title="People" onClick={() => onPanel('people')}>
        <Icon name="people" />
        <span class="ctl-label">People</span>
        {waiting + hands > 0 && <span class={`count${hands > 0 ? ' hands' : ''}`}>{waiting + hands}</span>}
      </button>
      <button class={`ctl${panel === 'polls' ? ' on' : ''}`} aria-pressed={panel === 'polls'} aria-label={`Polls${pollWaiting ? ', a poll is waiting for your answer' : ''}`} title="Polls" onClick={() => onPanel('polls')}>
        <Icon name="poll" />
        <span class="ctl-label">Polls</span>
        {pollWaiting && <span class="count">1</span>}
      </button>
      <button class={`ctl${panel === 'qa' ? ' on' : ''}`} aria-pressed={panel === 'qa'} aria-label={`Q&A${openQuestions ? `, ${openQuestions} open` : ''}`} title="Q&A" onClick={() => onPanel('qa')}>
        <Icon name="qa" />
        <span class="ctl-label">Q&amp;A</span>
        {may.host && openQuestions > 0 && <span class="count">{openQuestions}</span>}
      </button>
      {may.host ? (
        <LeaveMenu onLeave={() => void act.leave()} onEnd={() => confirm('End the meeting for everyone? Everyone leaves and nobody can join again.') && void act.endForEveryone()} />
      ) : (
        <button class="ctl leave" aria-label="Leave" title="Leave" onClick={() => void act.leave()}>
          <Icon name="leave" />
          <span class="ctl-label">Leave</span>
        </button>
      )}
    </nav>
  );
}
