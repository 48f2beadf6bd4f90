import { render } from 'preact';
import { RoomController } from './controller.ts';
import { embedBridge } from './embed-bridge.ts';
import { LAYOUT_MODES, LAYOUT_PARAM, PREJOIN_PARAM, type LayoutMode } from '../shared/embed-protocol.ts';
import { App } from './ui/app.tsx';
import './room.css';

/**
 * The room application: the join page (`/join/:slug#jt=…`) and the embedded page (`/embed/:slug?jt=…`)
 * run it. It exchanges the token only now, after load, so link previews never spend a link.
 */
const embedded = location.pathname.startsWith('/embed/');
const token = embedded ? new URLSearchParams(location.search).get('jt') : new URLSearchParams(location.hash.slice(1)).get('jt');
const bridge = embedded ? embedBridge() : null;
const fragment = new URLSearchParams(location.hash.slice(1));
const theme = fragment.get('theme');
const layout = fragment.get(LAYOUT_PARAM);
if (theme === 'dark' || theme === 'light') document.documentElement.dataset.theme = theme;

const controller = new RoomController({
  token,
  embedded,
  android: /Android/i.test(navigator.userAgent),
  prejoin: fragment.get(PREJOIN_PARAM) !== '0',
  layout: (LAYOUT_MODES as readonly (string | null)[]).includes(layout) ? (layout as LayoutMode) : undefined,
  emit: (e) => bridge?.emit(e),
});
bridge?.onCommand((command, value) => controller.onEmbedCommand(command, value));
(window as unknown as { aula: RoomController }).aula = controller;

render(<App c={controller} />, document.getElementById('app')!);
void controller.boot();
