/**
 * The room's keyboard shortcuts: a single key, without Ctrl, Alt or Meta, and never while the person
 * types (in a field, a text area, a list box, or anything editable). Pure, so it is tested without a
 * browser; the room view listens for keydown and runs the action.
 */

export type ShortcutAction = 'mic' | 'camera' | 'hand' | 'help';

/** Every shortcut, as the help dialog lists it. */
export const SHORTCUTS: readonly { key: string; label: string; action: ShortcutAction }[] = [
  { key: 'M', label: 'Turn your microphone on or off', action: 'mic' },
  { key: 'V', label: 'Turn your camera on or off', action: 'camera' },
  { key: 'H', label: 'Raise or lower your hand', action: 'hand' },
  { key: '?', label: 'Show these shortcuts', action: 'help' },
];

/** What a keydown means, or null: a key of its own in a place where the person is not typing. */
export function shortcutOf(e: { key: string; ctrlKey: boolean; altKey: boolean; metaKey: boolean; repeat?: boolean }, target: { tagName?: string; isContentEditable?: boolean } | null): ShortcutAction | null {
  if (e.ctrlKey || e.altKey || e.metaKey || e.repeat) return null;
  const tag = target?.tagName?.toUpperCase();
  if (target?.isContentEditable || tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') return null;
  const key = e.key.length === 1 ? e.key.toUpperCase() : e.key;
  return SHORTCUTS.find((s) => s.key === key)?.action ?? null;
}
