import { closeReason, type Ack, type AckResult, type CloseReason, type Command, type ServerMessage } from '../../src/core/room-protocol.ts';

/**
 * The room WebSocket (docs/room-protocol.md): commands with acks, server messages to listeners, and the
 * reason of the close the server gave. One instance per connection; the room controller makes a new one
 * to reconnect.
 */

/** What a socket hears besides the acks of its own commands. */
export type Heard = Exclude<ServerMessage, Ack>;

export class CommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class RoomSocket {
  readonly #ws: WebSocket;
  readonly #pending = new Map<string, { resolve(a: Ack): void; reject(e: Error): void }>();
  #next = 0;
  onMessage: (m: Heard) => void = () => {};
  /** `reason` null: the connection dropped (or the server gave no code of the protocol's). */
  onClose: (reason: CloseReason | null) => void = () => {};
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
        m = JSON.parse(String(e.data)) as ServerMessage;
      } catch {
        return;
      }
      if (m.type === 'ack') {
        if (m.id === null) return;
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        p?.resolve(m);
        return;
      }
      this.onMessage(m);
    });
    this.#ws.addEventListener('close', (e) => {
      for (const p of this.#pending.values()) p.reject(new CommandError('connection_closed', 'The connection closed.'));
      this.#pending.clear();
      this.onClose(closeReason(e.code));
    });
  }

  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  /** Sends a command and resolves with its ack's fields; a refusal rejects with a CommandError carrying the code. */
  async ask<M extends Command>(message: M): Promise<AckResult<M['type']>> {
    await this.opened;
    const id = `c${++this.#next}`;
    const ack = await new Promise<Ack>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#ws.send(JSON.stringify({ ...message, id }));
    });
    if (!ack.ok) throw new CommandError(ack.error.code, ack.error.message);
    // the ack's fields are the command's result (AckResults, the server's answer to this type)
    return ack as unknown as AckResult<M['type']>;
  }

  close(): void {
    this.#ws.close(1000);
  }
}
