/** The side panel of the room (people, polls, Q&A): a labelled region with a title and a close button; Escape closes it and gives focus back to its control. */
export function Panel({ label, title, control, onClose, children }: { label: string; title: string; control: string; onClose: () => void; children?: any }) {
  return (
    <aside
      class="panel"
      aria-label={label}
      onKeyDown={(e) => {
        if (e.key !== 'Escape') return;
        onClose();
        document.querySelector<HTMLButtonElement>(`nav.controls button[title="${control}"]`)?.focus();
      }}
    >
      <header>
        <h2>{title}</h2>
        <button class="icon-btn" aria-label={`Close the ${label.toLowerCase()} panel`} onClick={onClose}>
          ×
        </button>
      </header>
      {children}
    </aside>
  );
}
