import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * A button that opens a menu, operable as a WAI-ARIA menu button: Enter, Space or an arrow key opens
 * it on its first item; the arrow keys, Home and End move (and wrap); Escape closes it and gives focus
 * back to the button; Tab closes it and moves on; choosing an item or a tap elsewhere closes it. The
 * items are the children: buttons with role menuitem (or menuitemcheckbox).
 */
export function MenuButton({
  id,
  label,
  buttonClass,
  buttonLabel,
  groupClass,
  button,
  children,
}: {
  /** The menu's id (the button's aria-controls). */
  id: string;
  /** The menu's name, and the button's title. */
  label: string;
  buttonClass: string;
  /** The button's accessible name, when it says more than the label (what waits in the menu). */
  buttonLabel?: string;
  groupClass?: string;
  /** What the button shows. */
  button: ComponentChildren;
  children: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  const buttonRef = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);
  const group = useRef<HTMLSpanElement>(null);
  const items = () => [...(menu.current?.querySelectorAll<HTMLElement>('[role^="menuitem"]') ?? [])];
  useEffect(() => {
    if (!open) return;
    items()[0]?.focus();
    // a tap or click anywhere else closes it, as any menu
    const outside = (e: PointerEvent) => {
      if (!group.current?.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('pointerdown', outside);
    return () => document.removeEventListener('pointerdown', outside);
  }, [open]);
  const close = (refocus: boolean) => {
    setOpen(false);
    if (refocus) buttonRef.current?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    const all = items();
    const at = all.indexOf(document.activeElement as HTMLElement);
    const to = { ArrowDown: at + 1, ArrowUp: at - 1 + all.length, Home: 0, End: all.length - 1 }[e.key];
    if (e.key === 'Escape') {
      e.preventDefault();
      // the panel or dialog around the menu must not close too
      e.stopPropagation();
      close(true);
    } else if (to !== undefined) {
      e.preventDefault();
      all[to % all.length]?.focus();
    } else if (e.key === 'Tab') close(false);
  };
  return (
    <span class={groupClass ?? 'menu-group'} ref={group}>
      <button
        ref={buttonRef}
        class={buttonClass}
        aria-label={buttonLabel ?? label}
        title={label}
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={id}
        onClick={() => setOpen(!open)}
        onKeyDown={(e) => {
          if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
            e.preventDefault();
            setOpen(true);
          }
        }}
      >
        {button}
      </button>
      {open && (
        <div
          class="menu"
          role="menu"
          id={id}
          aria-label={label}
          ref={menu}
          onKeyDown={onKey}
          // choosing an item closes the menu; the focus goes back to the button unless what was chosen took it (a panel that opened)
          onClick={(e) => {
            if (!(e.target as HTMLElement).closest('[role^="menuitem"]')) return;
            const at = document.activeElement;
            close(at === null || at === document.body || !!menu.current?.contains(at));
          }}
        >
          {children}
        </div>
      )}
    </span>
  );
}
