import t from 'tap';
import { SHORTCUTS, shortcutOf } from '../../web/room/shortcuts.ts';

// The room's keyboard shortcuts, in Node: a key of its own does its action; a key with a modifier, a held
// key's repeats, or any key while the person types does nothing.

const key = (k: string, mods: Partial<{ ctrlKey: boolean; altKey: boolean; metaKey: boolean; repeat: boolean }> = {}) => ({ key: k, ctrlKey: false, altKey: false, metaKey: false, ...mods });
const body = { tagName: 'BODY' };

t.test('each listed key does its action, whatever the case', async (t) => {
  t.equal(shortcutOf(key('m'), body), 'mic');
  t.equal(shortcutOf(key('M'), body), 'mic');
  t.equal(shortcutOf(key('v'), body), 'camera');
  t.equal(shortcutOf(key('h'), body), 'hand');
  t.equal(shortcutOf(key('?'), body), 'help');
  t.equal(shortcutOf(key('m'), { tagName: 'BUTTON' }), 'mic', 'on a focused button too');
  t.same(SHORTCUTS.map((s) => s.key), ['M', 'V', 'H', '?'], 'the help dialog lists them all');
});

t.test('nothing while typing, with a modifier, or for a held key', async (t) => {
  for (const tagName of ['INPUT', 'TEXTAREA', 'SELECT', 'input']) t.equal(shortcutOf(key('m'), { tagName }), null, `not in ${tagName}`);
  t.equal(shortcutOf(key('m'), { tagName: 'DIV', isContentEditable: true }), null, 'not in an editable element');
  t.equal(shortcutOf(key('m', { ctrlKey: true }), body), null, 'Ctrl+M is the browser\'s');
  t.equal(shortcutOf(key('v', { metaKey: true }), body), null, 'Cmd+V pastes');
  t.equal(shortcutOf(key('h', { altKey: true }), body), null);
  t.equal(shortcutOf(key('m', { repeat: true }), body), null, 'a held key toggles once');
  t.equal(shortcutOf(key('x'), body), null, 'other keys do nothing');
  t.equal(shortcutOf(key('Enter'), body), null);
  t.equal(shortcutOf(key('m'), null), 'mic', 'no target: the document');
});
