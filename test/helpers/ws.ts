import type { Test } from 'tap';
import WebSocket from 'ws';

/** A real WebSocket client of the media gateway that records what it receives. */
export class RoomClient {
  readonly ws: WebSocket;
  readonly messages: any[] = [];
  closed: { code: number; reason: string } | null = null;
  readonly opened: Promise<void>;
  #waiters: { pred: (m: any) => boolean; resolve: (m: any) => void }[] = [];
  #seq = 0;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      this.ws.once('error', reject);
    });
    this.ws.on('message', (data) => {
      const m = JSON.parse(String(data)); if (process.env.WSDEBUG) console.error('WS <-', String(data));
      this.messages.push(m);
      this.#waiters = this.#waiters.filter((w) => (w.pred(m) ? (w.resolve(m), false) : true));
    });
    this.ws.on('close', (code, reason) => {
      this.closed = { code, reason: String(reason) };
    });
  }

  /** The next message (already received or coming) that matches. */
  next(pred: (m: any) => boolean, timeoutMs = 5000): Promise<any> {
    const seen = this.messages.find(pred);
    if (seen) {
      this.messages.splice(this.messages.indexOf(seen), 1);
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching message in ${timeoutMs} ms; got ${JSON.stringify(this.messages).slice(0, 500)}`)), timeoutMs);
      this.#waiters.push({
        pred,
        resolve: (m) => {
          clearTimeout(timer);
          this.messages.splice(this.messages.indexOf(m), 1);
          resolve(m);
        },
      });
    });
  }

  type(type: string, timeoutMs?: number): Promise<any> {
    return this.next((m) => m.type === type, timeoutMs);
  }

  /** Sends a command and waits for its ack. */
  async command(msg: Record<string, unknown>): Promise<any> {
    const id = `c${++this.#seq}`;
    this.ws.send(JSON.stringify({ ...msg, id }));
    return this.next((m) => m.type === 'ack' && m.id === id);
  }

  waitClosed(timeoutMs = 5000): Promise<{ code: number; reason: string }> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('socket did not close')), timeoutMs);
      this.ws.once('close', (code, reason) => {
        clearTimeout(timer);
        resolve({ code, reason: String(reason) });
      });
    });
  }

  close(): void {
    this.ws.close();
  }
}

export async function connect(t: Test, mediaUrl: string, token: string, device = 'web'): Promise<RoomClient> {
  const c = new RoomClient(`${mediaUrl}?token=${encodeURIComponent(token)}&device=${device}`);
  t.teardown(() => c.ws.terminate());
  await c.opened;
  return c;
}

/** Polls until `fn` returns a truthy value (for effects that land asynchronously). */
export async function eventually<T>(fn: () => Promise<T> | T, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts a meeting the way a host does: a HOST link, its exchange, and a connection to the room. */
export async function goLive(
  t: Test,
  node: { url: string },
  key: string,
  meetingId: string,
  hostUserId: string,
): Promise<RoomClient> {
  const post = async (path: string, body: unknown, auth?: string) => {
    const res = await fetch(`${node.url}/api/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { data: any };
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json.data;
  };
  const link = await post(`/public/meetings/${meetingId}/join-links`, { userId: hostUserId, role: 'HOST' }, key);
  const session = await post('/join-tokens/exchange', { token: link.token, deviceId: `host-${Math.random()}` });
  const client = await connect(t, session.mediaUrl, session.mediaToken);
  await client.type('joined');
  return client;
}
