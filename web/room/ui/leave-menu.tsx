import { useEffect, useRef, useState } from 'preact/hooks';
import { Icon } from './common.tsx';

/**
 * A host's Leave button opens a menu (leave, or end for everyone), operable as a WAI-ARIA menu button:
 * opening focuses the first item, arrow keys move, Escape or Tab closes it and focus returns to the button;
 * a tap elsewhere closes it.
 */
export function LeaveMenu({ onLeave, onEnd }: { onLeave: () => void; onEnd: () => void }) {
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
          <button role="menuitem" class="btn" onClick={onLeave}>
            Leave the meeting
          </button>
          <button role="menuitem" class="btn danger" onClick={onEnd}>
            End for everyone
          </button>
        </div>
      )}
    </span>
  );
}
