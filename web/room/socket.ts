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

/** A command not answered this long is given up (a socket whose TCP died answers nothing, and closes late if ever). */
export const ASK_TIMEOUT_MS = 60_000;
/** How often an idle socket checks it is alive, and how long a check waits for its answer. */
export const HEARTBEAT_MS = 10_000;
export const HEARTBEAT_TIMEOUT_MS = 5000;

export class RoomSocket {
  readonly #ws: WebSocket;
  readonly #pending = new Map<string, { resolve(a: Ack): void; reject(e: Error): void }>();
  #next = 0;
  #dead = false;
  /** The page found it dead (a probe went unanswered): the network changed under it, and a new socket may go at once. */
  foundDead = false;
  #heartbeat: ReturnType<typeof setInterval> | null = null;
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
    this.opened.then(() => {
      this.#heartbeat = setInterval(() => void this.probe(HEARTBEAT_TIMEOUT_MS), HEARTBEAT_MS);
    }, () => {});
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
    this.#ws.addEventListener('close', (e) => this.#gone(closeReason(e.code)));
  }

  get open(): boolean {
    return !this.#dead && this.#ws.readyState === WebSocket.OPEN;
  }

  /**
   * Whether the server still answers: a ping, given up after `timeoutMs`. A socket that does not answer
   * is dead (the network under it changed: its TCP connection is gone, and the browser may not say so
   * for minutes); it is closed now, as if it had dropped, and the room connects again.
   */
  async probe(timeoutMs: number): Promise<boolean> {
    if (this.#dead) return false;
    try {
      await this.ask({ type: 'ping' }, timeoutMs);
      return true;
    } catch (e) {
      if (e instanceof CommandError && e.code === 'timeout' && !this.#dead) {
        this.foundDead = true;
        this.#gone(null);
      }
      return false;
    }
  }

  /** The socket is over (closed, or found dead): every command waiting is refused, and the room hears it once. */
  #gone(reason: CloseReason | null): void {
    if (this.#dead) return;
    this.#dead = true;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    for (const p of this.#pending.values()) p.reject(new CommandError('connection_closed', 'The connection closed.'));
    this.#pending.clear();
    this.onClose(reason);
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) this.#ws.close(1000);
  }

  /** Sends a command and resolves with its ack's fields; a refusal rejects with a CommandError carrying the code. */
  async ask<M extends Command>(message: M, timeoutMs = ASK_TIMEOUT_MS): Promise<AckResult<M['type']>> {
    await this.opened;
    if (this.#dead) throw new CommandError('connection_closed', 'The connection closed.');
    const id = `c${++this.#next}`;
    const ack = await new Promise<Ack>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new CommandError('timeout', 'The server did not answer.'));
      }, timeoutMs);
      this.#pending.set(id, {
        resolve: (a) => {
          clearTimeout(timer);
          resolve(a);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.#ws.send(JSON.stringify({ ...message, id }));
    });
    if (!ack.ok) throw new CommandError(ack.error.code, ack.error.message);
    // the ack's fields are the command's result (AckResults, the server's answer to this type)
    return ack as unknown as AckResult<M['type']>;
  }

  close(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#ws.close(1000);
  }
}
