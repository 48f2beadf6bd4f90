import { Icon } from './common.tsx';
import { MenuButton } from './menu.tsx';

/** A host's Leave button opens a menu: leave, or end the meeting for everyone (menu.tsx: the keys and the focus). */
export function LeaveMenu({ onLeave, onEnd }: { onLeave: () => void; onEnd: () => void }) {
  return (
    <MenuButton
      id="leave-menu"
      label="Leave"
      buttonClass="ctl leave"
      groupClass="leave-group"
      button={
        <>
          <Icon name="leave" />
          <span class="ctl-label">Leave</span>
        </>
      }
    >
      <button role="menuitem" class="btn" onClick={onLeave}>
        Leave the meeting
      </button>
      <button role="menuitem" class="btn danger" onClick={onEnd}>
        End for everyone
      </button>
    </MenuButton>
  );
}
