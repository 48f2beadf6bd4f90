import { REACTIONS } from '../../../src/core/chat.ts';
import type { RoomController } from '../controller.ts';
import type { State } from '../reducer.ts';

/**
 * Quick reactions: the React control opens a row of a few emoji; each sent one floats over its
 * sender's tile on every page for a few seconds (the controller times it out), or, for someone whose
 * tile is not on this page, in the stage's corner with their name.
 */

/** The row of quick reactions, above the control bar while the React control has it open; Escape closes it. */
export function ReactionRow({ act, onDone }: { act: Pick<RoomController, 'react'>; onDone: () => void }) {
  return (
    <div class="reaction-row" id="reaction-row" role="group" aria-label="Reactions" onKeyDown={(e) => e.key === 'Escape' && onDone()}>
      {REACTIONS.map((emoji, i) => (
        <button key={emoji} class="icon-btn" aria-label={`React ${emoji}`} autoFocus={i === 0} onClick={() => (void act.react(emoji), onDone())}>
          {emoji}
        </button>
      ))}
    </div>
  );
}

/** The reactions floating now, over the sender's camera tile where it is on the page. */
export function FloatingReactions({ room: s }: { room: Pick<State, 'reactions' | 'roster'> }) {
  return (
    <div class="reactions" aria-hidden="true">
      {s.reactions.map((r) => {
        const tile = document.querySelector<HTMLElement>(`[data-view-participant="${CSS.escape(r.participantId)}"]`);
        const box = tile?.getBoundingClientRect();
        const name = s.roster.find((p) => p.participantId === r.participantId)?.name ?? '';
        return box && box.width > 0 ? (
          <span key={r.key} class="reaction" data-reaction-of={r.participantId} style={{ left: `${box.left + box.width / 2}px`, top: `${box.top + box.height * 0.6}px` }}>
            {r.emoji}
          </span>
        ) : (
          <span key={r.key} class="reaction corner" data-reaction-of={r.participantId}>
            {r.emoji} <small>{name}</small>
          </span>
        );
      })}
    </div>
  );
}
