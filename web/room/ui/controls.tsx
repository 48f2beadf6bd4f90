import { useEffect, useRef, useState } from 'preact/hooks';
import type { RoomController } from '../controller.ts';
import type { Access, State } from '../reducer.ts';
import { Icon } from './common.tsx';
import { LeaveMenu } from './leave-menu.tsx';
import { MenuButton } from './menu.tsx';

/**
 * The room's control bar: microphone, camera, screen (each only when the role may), hand, the panels,
 * and leaving. On a narrow screen (a phone) the bar keeps the four that matter most in a class and
 * Leave, and the rest go in a More menu, as Meet's phone app does.
 */

export type PanelName = 'people' | 'polls' | 'qa' | 'chat';

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
  /** Chat messages that came while the chat panel was closed. */
  unreadChat?: number;
}

/** Whether this browser can share a screen at all (phones' browsers cannot): the button is not offered where it cannot work. */
const canShareScreen = (): boolean => typeof navigator !== 'undefined' && typeof navigator.mediaDevices?.getDisplayMedia === 'function';

/** The width below which the bar is the phone's (the same as room.css's narrow layout). */
const NARROW = '(max-width: 640px)';

/** How many controls a narrow bar shows besides Leave; the others go in More. */
const NARROW_SLOTS = 4;

/** The order in which the controls earn a place in the narrow bar: a host keeps People (the waiting and the hands) where a student keeps the hand. */
const PRIORITY = ['mic', 'cam', 'hand', 'chat', 'people', 'polls', 'qa', 'react', 'cc', 'screen', 'record'];
const HOST_PRIORITY = ['mic', 'cam', 'people', 'chat', 'hand', 'polls', 'qa', 'react', 'cc', 'screen', 'record'];

function useMatches(query: string): boolean {
  const [matches, setMatches] = useState(() => matchMedia(query).matches);
  useEffect(() => {
    const list = matchMedia(query);
    const changed = () => setMatches(list.matches);
    list.addEventListener('change', changed);
    changed();
    return () => list.removeEventListener('change', changed);
  }, [query]);
  return matches;
}

/** One control, drawn as a button of the bar or as an item of the More menu. */
interface Control {
  key: string;
  /** What it shows, and its title. */
  label: string;
  /** Its accessible name: the label and what its badge says. */
  name: string;
  icon: string;
  /** A toggle's state, or whether its panel is open. */
  pressed: boolean;
  /** Microphone and camera: drawn crossed out and red while off. */
  device?: boolean;
  /** The number on its badge (none at 0). */
  count?: number;
  /** The badge is a hand's colour (raised hands wait). */
  hands?: boolean;
  /** What More's name says of it while it is in the menu (a count, something waiting). */
  note?: string;
  onClick: () => void;
}

/**
 * A control's count. The name already says it ("People, 2 waiting"), so the number is drawn by CSS from
 * data-count: it is no text of the button's, which would then have to be part of its name, in order.
 */
function Badge({ c }: { c: Pick<Control, 'count' | 'hands'> }) {
  return c.count ? <span class={`count${c.hands ? ' hands' : ''}`} data-count={c.count} aria-hidden="true" /> : null;
}

function BarButton({ c }: { c: Control }) {
  const state = c.pressed ? ' on' : c.device ? ' off' : '';
  return (
    <button class={`ctl${state}`} aria-pressed={c.pressed} aria-label={c.name} title={c.label} onClick={c.onClick}>
      <Icon name={c.icon} off={c.device && !c.pressed} />
      <span class="ctl-label">{c.label}</span>
      <Badge c={c} />
    </button>
  );
}

function MenuItem({ c }: { c: Control }) {
  return (
    <button role="menuitemcheckbox" aria-checked={c.pressed} class={`btn menu-item${c.device && !c.pressed ? ' off' : ''}`} aria-label={c.name} onClick={c.onClick}>
      <Icon name={c.icon} off={c.device && !c.pressed} />
      <span>{c.label}</span>
      <Badge c={c} />
    </button>
  );
}

export function Controls({
  media: s,
  may,
  handUp,
  counts,
  panel,
  onPanel,
  reacting,
  onReact,
  recording,
  captions,
  captionsOffered,
  act,
}: {
  media: Pick<State, 'micOn' | 'camOn' | 'screenOn'>;
  may: Access;
  handUp: boolean;
  counts: Counts;
  panel: PanelName | null;
  onPanel: (name: PanelName) => void;
  /** The quick reactions' row is open; the React control opens and closes it. */
  reacting: boolean;
  onReact: () => void;
  /** The class is being recorded (hosts' Record control stops it). */
  recording: boolean;
  /** Live captions are on for this person. */
  captions: boolean;
  /** The room offers live captions (the organization may have them and the server makes them). */
  captionsOffered: boolean;
  act: Pick<RoomController, 'toggleMic' | 'toggleCamera' | 'toggleScreen' | 'raiseHand' | 'leave' | 'endForEveryone' | 'record' | 'setCaptions'>;
}) {
  const narrow = useMatches(NARROW);
  const nav = useRef<HTMLElement>(null);
  useEffect(() => {
    // entering the room (Join, or a host's admission) removed the button that had the focus: the keyboard starts on the first control
    // (not when the page has no focus to give: an embedding page keeps its own)
    const lost = document.activeElement === null || document.activeElement === document.body;
    if (lost && document.hasFocus()) nav.current?.querySelector<HTMLButtonElement>('button')?.focus();
  }, []);

  const { waiting, pollWaiting, openQuestions } = counts;
  const hands = may.host ? counts.hands : 0;
  const unread = counts.unreadChat ?? 0;
  const peopleNote = [waiting ? `${waiting} waiting` : '', hands ? `${hands} ${hands === 1 ? 'hand' : 'hands'} raised` : ''].filter(Boolean).join(', ');
  const questionsNote = openQuestions ? `${openQuestions} open` : '';
  const panelControl = (key: PanelName, label: string, icon: string, note: string, count: number, more: Partial<Control> = {}): Control => ({
    key,
    label,
    name: note ? `${label}, ${note}` : label,
    icon,
    pressed: panel === key,
    count,
    ...(note ? { note: `${label}: ${note}` } : {}),
    onClick: () => onPanel(key),
    ...more,
  });
  const controls: Control[] = [];
  if (may.send) {
    controls.push({ key: 'mic', label: s.micOn ? 'Mute' : 'Unmute', name: s.micOn ? 'Mute' : 'Unmute', icon: 'mic', pressed: s.micOn, device: true, onClick: () => void act.toggleMic() });
    controls.push({ key: 'cam', label: s.camOn ? 'Stop video' : 'Start video', name: s.camOn ? 'Stop video' : 'Start video', icon: 'cam', pressed: s.camOn, device: true, onClick: () => void act.toggleCamera() });
  }
  if (may.shareScreen && canShareScreen()) {
    const label = s.screenOn ? 'Stop sharing' : 'Share screen';
    controls.push({ key: 'screen', label, name: label, icon: 'screen', pressed: s.screenOn, onClick: () => void act.toggleScreen() });
  }
  controls.push({ key: 'hand', label: handUp ? 'Lower hand' : 'Raise hand', name: handUp ? 'Lower hand' : 'Raise hand', icon: 'hand', pressed: handUp, onClick: () => void act.raiseHand(!handUp) });
  controls.push(panelControl('people', 'People', 'people', peopleNote, waiting + hands, { hands: hands > 0 }));
  controls.push(panelControl('chat', 'Chat', 'chat', unread ? `${unread} unread` : '', unread));
  controls.push(panelControl('polls', 'Polls', 'poll', pollWaiting ? 'a poll is waiting for your answer' : '', pollWaiting ? 1 : 0));
  controls.push(panelControl('qa', 'Q&A', 'qa', questionsNote, may.host ? openQuestions : 0));
  controls.push({ key: 'react', label: 'React', name: 'React', icon: 'smile', pressed: reacting, onClick: onReact });
  if (captionsOffered || captions) controls.push({ key: 'cc', label: 'Captions', name: 'Live captions', icon: 'cc', pressed: captions, onClick: () => void act.setCaptions(!captions) });
  if (may.host) {
    const label = recording ? 'Stop recording' : 'Record';
    controls.push({ key: 'record', label, name: label, icon: 'rec', pressed: recording, onClick: () => (recording ? confirm('Stop recording? The recording is saved and processed.') && void act.record(false) : void act.record(true)) });
  }

  const order = may.host ? HOST_PRIORITY : PRIORITY;
  const inBar = narrow ? new Set(controls.map((c) => c.key).sort((a, b) => order.indexOf(a) - order.indexOf(b)).slice(0, NARROW_SLOTS)) : null;
  const bar = inBar ? controls.filter((c) => inBar.has(c.key)) : controls;
  const rest = inBar ? controls.filter((c) => !inBar.has(c.key)) : [];
  const notes = rest.map((c) => c.note).filter(Boolean);
  const waitingInMore = rest.reduce((n, c) => n + (c.count ?? 0), 0);
  return (
    <nav class={`controls${narrow ? ' narrow' : ''}`} aria-label="Meeting controls" ref={nav}>
      {bar.map((c) => (
        <BarButton key={c.key} c={c} />
      ))}
      {rest.length > 0 && (
        <MenuButton
          id="more-menu"
          label="More"
          buttonLabel={notes.length ? `More, ${notes.join(', ')}` : 'More'}
          buttonClass="ctl more"
          button={
            <>
              <Icon name="more" />
              <span class="ctl-label">More</span>
              <Badge c={{ count: waitingInMore, hands: rest.some((c) => c.hands) }} />
            </>
          }
        >
          {rest.map((c) => (
            <MenuItem key={c.key} c={c} />
          ))}
        </MenuButton>
      )}
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
