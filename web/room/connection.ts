import * as api from './api.ts';
import type { CloseReason } from '../../src/core/room-protocol.ts';
import { RoomSocket, type Heard } from './socket.ts';
import type { Store } from './store.ts';

/**
 * The room socket, kept open: a close the server gave for good goes to the controller; any other (a
 * dropped connection, a server shutting down, a socket closed for flooding) reconnects with backoff
 * (0.5 s doubling to 8 s), refreshing the session first when its token is about to expire.
 */

const RECONNECT_DELAYS = [500, 1000, 2000, 4000, 8000];

export interface ConnectionEvents {
  message(m: Heard): void;
  /** The socket closed (its media with it). True when that ends the visit: no reconnect. */
  closed(reason: CloseReason | null): boolean;
  failed(code: string): void;
}

export class Connection {
  socket: RoomSocket | null = null;
  readonly #store: Store;
  readonly #on: ConnectionEvents;
  #attempt = 0;

  constructor(store: Store, on: ConnectionEvents) {
    this.#store = store;
    this.#on = on;
  }

  connect(url: string, token: string): void {
    if (this.#store.state.phase !== 'reconnecting') this.#store.set({ phase: 'connecting' });
    const socket = new RoomSocket(url, token);
    this.socket = socket;
    socket.onMessage = (m) => this.#on.message(m);
    socket.onClose = (reason) => void this.#closed(socket, reason);
  }

  /** The room took the socket: the next drop starts the backoff from the beginning. */
  joined(): void {
    this.#attempt = 0;
  }

  async #closed(socket: RoomSocket, reason: CloseReason | null): Promise<void> {
    if (this.socket !== socket) return;
    this.socket = null;
    if (this.#on.closed(reason)) return;
    // a socket the page found dead (the network changed under it) is replaced at once; any other waits its turn
    const delay = socket.foundDead && this.#attempt === 0 ? 0 : RECONNECT_DELAYS[Math.min(this.#attempt++, RECONNECT_DELAYS.length - 1)]!;
    this.#store.set({ phase: 'reconnecting' });
    await new Promise((r) => setTimeout(r, delay));
    let s = this.#store.state.session!;
    if (Date.parse(s.expiresAt) - Date.now() < 60_000) {
      try {
        s = await api.refresh(s.accessToken);
        this.#store.set({ session: s });
      } catch (err) {
        if (err instanceof api.ApiError && err.status >= 400 && err.status < 500) return this.#on.failed(err.code);
      }
    }
    if (s.mediaToken) this.connect(s.mediaUrl, s.mediaToken);
  }

  close(): void {
    this.socket?.close();
  }
}
