import { useLayoutEffect, useRef } from 'preact/hooks';

/** The control bar's button that opens a panel, or More when that button is in the More menu (a phone). */
const opener = (control: string) =>
  document.querySelector<HTMLButtonElement>(`nav.controls button[title="${control}"]`) ?? document.querySelector<HTMLButtonElement>('nav.controls button[aria-controls="more-menu"]');

/**
 * The side panel of the room (people, polls, Q&A, chat): a labelled region with a title and a close
 * button. Opening it moves the focus to its title, so a screen reader says which panel opened and Tab
 * goes on into it; closing it (Escape, the close button) gives the focus back to the control that opens
 * it; the focus lost with a button that went away comes back to the title.
 */
export function Panel({ label, title, control, onClose, children }: { label: string; title: string; control: string; onClose: () => void; children?: any }) {
  const root = useRef<HTMLElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  useLayoutEffect(() => {
    heading.current?.focus();
    const el = root.current;
    // a button that goes away as it is used (Admit, Dismiss, Close a poll) would drop the focus on the page: it comes back to the title
    let last: Element | null = null;
    const track = (e: FocusEvent) => (last = e.target as Element);
    const left = (e: FocusEvent) => {
      if (e.relatedTarget instanceof Node && !el?.contains(e.relatedTarget)) last = null;
    };
    el?.addEventListener('focusin', track);
    el?.addEventListener('focusout', left);
    const watch = new MutationObserver(() => {
      if (last && !last.isConnected && (document.activeElement === null || document.activeElement === document.body)) heading.current?.focus();
    });
    if (el) watch.observe(el, { childList: true, subtree: true });
    return () => {
      watch.disconnect();
      el?.removeEventListener('focusin', track);
      el?.removeEventListener('focusout', left);
      // only when the focus was in the panel (or is lost with it): a person who clicked elsewhere keeps it there
      const at = document.activeElement;
      if (at === null || at === document.body || el?.contains(at)) opener(control)?.focus();
    };
  }, []);
  return (
    <aside
      ref={root}
      class="panel"
      aria-label={label}
      onKeyDown={(e) => {
        if (e.key === 'Escape' && !e.defaultPrevented) onClose();
      }}
    >
      <header>
        <h2 ref={heading} tabIndex={-1}>
          {title}
        </h2>
        <button class="icon-btn" aria-label={`Close the ${label.toLowerCase()} panel`} onClick={onClose}>
          ×
        </button>
      </header>
      {children}
    </aside>
  );
}
