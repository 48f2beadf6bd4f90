import type { RoomController } from '../controller.ts';
import type { Alert } from '../reducer.ts';
import type { PanelName } from './controls.tsx';
import { Icon } from './common.tsx';

/**
 * The hosts' alerts: a toast for each thing a teacher must not miss with the panels closed, naming the
 * person and offering the action. They sit in a polite live region, so screen readers say them without
 * cutting in; an alert about what an open panel already shows is not repeated.
 */

type AlertActions = Pick<RoomController, 'lowerHandOf' | 'admit' | 'unlock' | 'dismissAlert'>;

/** The panel that already shows what an alert says. */
const PANEL_OF: Record<Alert['kind'], PanelName | null> = { hand: 'people', waiting: 'people', question: 'qa', knock: null };

const quote = (text: string) => (text.length > 80 ? `${text.slice(0, 79)}…` : text);

function words(a: Alert): { icon: string; text: string } {
  switch (a.kind) {
    case 'hand':
      return { icon: 'hand', text: `${a.name} raised their hand` };
    case 'waiting':
      return { icon: 'door', text: `${a.name} is waiting to join` };
    case 'question':
      return { icon: 'qa', text: `${a.name ?? 'Someone (anonymous)'} asked: “${quote(a.text)}”` };
    case 'knock':
      return { icon: 'lock', text: `${a.name} tried to join, but the meeting is locked` };
  }
}

export function Alerts({ alerts, panel, openPanel, act }: { alerts: Alert[]; panel: PanelName | null; openPanel: (p: PanelName) => void; act: AlertActions }) {
  const shown = alerts.filter((a) => PANEL_OF[a.kind] === null || PANEL_OF[a.kind] !== panel);
  return (
    <div class="alerts" id="alerts" role="status" aria-live="polite" aria-label="Alerts">
      {shown.map((a) => {
        const { icon, text } = words(a);
        const done = () => act.dismissAlert(a.key);
        return (
          <div class={`alert ${a.kind}`} key={a.key} data-alert={a.kind}>
            <span class="alert-icon">
              <Icon name={icon} />
            </span>
            <span class="alert-text">{text}</span>
            {a.kind === 'hand' && (
              <button class="btn small" onClick={() => (void act.lowerHandOf(a.participantId), done())}>
                Lower hand
              </button>
            )}
            {a.kind === 'waiting' && (
              <button class="btn small primary" onClick={() => (void act.admit(a.queueId), done())}>
                Admit
              </button>
            )}
            {a.kind === 'question' && (
              <button class="btn small" onClick={() => (openPanel('qa'), done())}>
                Open Q&amp;A
              </button>
            )}
            {a.kind === 'knock' && (
              <button class="btn small" onClick={() => (void act.unlock(), done())}>
                Unlock
              </button>
            )}
            <button class="icon-btn small" aria-label="Dismiss" onClick={done}>
              ×
            </button>
          </div>
        );
      })}
    </div>
  );
}
