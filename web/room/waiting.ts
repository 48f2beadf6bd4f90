import * as api from './api.ts';
import type { Session } from './api.ts';
import { RoomSocket } from './socket.ts';

/**
 * The waiting room: the page listens on the room socket with its accessToken and hears its outcome
 * pushed; if the socket fails it asks the status route with backoff (1 s doubling to 15 s), and tries the
 * socket again now and then. Each outcome is told once, and then it stops.
 */

export interface WaitingOutcomes {
  admitted(): void;
  denied(): void;
  /** The entry expired, or left; `meetingEnded` when the meeting ended meanwhile. */
  expired(meetingEnded: boolean): void;
  failed(code: string): void;
}

export class WaitingRoom {
  readonly #session: Session;
  readonly #on: WaitingOutcomes;
  #socket: RoomSocket | null = null;
  #done = false;

  constructor(session: Session, on: WaitingOutcomes) {
    this.#session = session;
    this.#on = on;
    this.#listen();
  }

  #settle(outcome: () => void): void {
    if (this.#done) return;
    this.close();
    outcome();
  }

  #listen(): void {
    const socket = new RoomSocket(this.#session.mediaUrl, this.#session.accessToken);
    this.#socket = socket;
    socket.onMessage = (m) => {
      if (m.type === 'admitted') this.#settle(() => this.#on.admitted());
      else if (m.type === 'denied') this.#settle(() => this.#on.denied());
      else if (m.type === 'expired') this.#settle(() => this.#on.expired(m.reason === 'meeting_ended'));
    };
    socket.onClose = () => {
      if (this.#socket !== socket || this.#done) return;
      this.#socket = null;
      void this.#poll(0);
    };
  }

  async #poll(attempt: number): Promise<void> {
    if (this.#done) return;
    try {
      const { status } = await api.waitingStatus(this.#session);
      if (status === 'ADMITTED') return this.#settle(() => this.#on.admitted());
      if (status === 'DENIED') return this.#settle(() => this.#on.denied());
      if (status === 'EXPIRED' || status === 'LEFT') return this.#settle(() => this.#on.expired(false));
      if (attempt % 5 === 4) return this.#listen();
    } catch (err) {
      if (err instanceof api.ApiError && err.status >= 400 && err.status < 500 && err.code !== 'rate_limited') return this.#settle(() => this.#on.failed(err.code));
    }
    setTimeout(() => void this.#poll(attempt + 1), Math.min(1000 * 2 ** Math.min(attempt, 4), 15_000));
  }

  /** Gives up the place in the queue (the entry becomes LEFT), then stops. */
  async leave(): Promise<void> {
    await this.#socket?.ask({ type: 'leave' }).catch(() => {});
    this.close();
  }

  close(): void {
    this.#done = true;
    this.#socket?.close();
    this.#socket = null;
  }
}
