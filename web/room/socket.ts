/**
 * The room WebSocket (docs/room-protocol.md): commands with acks, server messages to listeners, and the
 * close code the server gave. One instance per connection; the room controller makes a new one to
 * reconnect.
 */

export interface Ack {
  type: 'ack';
  id: string | null;
  ok: boolean;
  error?: { code: string; message: string; details?: Record<string, unknown> };
  [field: string]: unknown;
}

export class CommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Close codes that end the visit; any other close is a dropped connection to reconnect. */
export const FINAL_CLOSES: Record<number, 'left' | 'removed' | 'meeting_ended' | 'user_deactivated' | 'refused' | 'replaced' | 'unauthorized' | 'abuse'> = {
  4000: 'left',
  4001: 'removed',
  4002: 'meeting_ended',
  4003: 'user_deactivated',
  4004: 'refused',
  4005: 'replaced',
  4401: 'unauthorized',
  1008: 'abuse',
};

export type ServerMessage = { type: string; [field: string]: any };

export class RoomSocket {
  readonly #ws: WebSocket;
  readonly #pending = new Map<string, { resolve(a: Ack): void; reject(e: Error): void }>();
  #next = 0;
  onMessage: (m: ServerMessage) => void = () => {};
  onClose: (code: number) => void = () => {};
  readonly opened: Promise<void>;

  constructor(url: string, token: string) {
    const u = new URL(url);
    u.searchParams.set('token', token);
    u.searchParams.set('device', 'web');
    this.#ws = new WebSocket(u);
    this.opened = new Promise((resolve, reject) => {
      this.#ws.addEventListener('open', () => resolve(), { once: true });
      this.#ws.addEventListener('close', () => reject(new Error('closed before it opened')), { once: true });
    });
    this.opened.catch(() => {});
    this.#ws.addEventListener('message', (e) => {
      let m: ServerMessage;
      try {
        m = JSON.parse(String(e.data));
      } catch {
        return;
      }
      if (m.type === 'ack' && typeof m.id === 'string') {
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        p?.resolve(m as Ack);
        return;
      }
      this.onMessage(m);
    });
    this.#ws.addEventListener('close', (e) => {
      for (const p of this.#pending.values()) p.reject(new CommandError('connection_closed', 'The connection closed.'));
      this.#pending.clear();
      this.onClose(e.code);
    });
  }

  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  /** Sends a command and resolves with its ack's fields; a refusal rejects with a CommandError carrying the code. */
  async ask<T = Record<string, any>>(message: Record<string, unknown>): Promise<T> {
    await this.opened;
    const id = `c${++this.#next}`;
    const ack = await new Promise<Ack>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#ws.send(JSON.stringify({ ...message, id }));
    });
    if (!ack.ok) throw new CommandError(ack.error?.code ?? 'error', ack.error?.message ?? 'Refused.');
    return ack as unknown as T;
  }

  close(): void {
    this.#ws.close(1000);
  }
}
