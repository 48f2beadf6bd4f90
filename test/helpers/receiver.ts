import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';

export interface Received {
  headers: IncomingHttpHeaders;
  raw: Buffer;
  body: any;
  /** performance.now() when the request's body had arrived */
  at: number;
}

/** What the receiver answers; `hang` keeps the request open until the receiver closes (or `release()`). */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | { hang: true };

/** A real webhook receiver on 127.0.0.1: records every request with its raw body and answers as told. */
export class Receiver {
  readonly received: Received[] = [];
  answer: (r: Received) => Answer = () => ({ status: 200, body: 'ok' });
  #server = http.createServer((req, res) => void this.#handle(req, res));
  #hanging = new Set<ServerResponse>();
  #waiters: { n: number; resolve: () => void }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  port = 0;

  static async start(t: Test): Promise<Receiver> {
    const r = new Receiver();
    await new Promise<void>((resolve) => r.#server.listen(0, '127.0.0.1', resolve));
    r.port = (r.#server.address() as AddressInfo).port;
    t.teardown(() => r.close());
    return r;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Resolves once `n` requests in all have arrived. */
  waitFor(n: number, timeoutMs = 15_000): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`receiver: ${this.received.length} of ${n} requests after ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  /** Answers every hanging request with `status`. */
  release(status = 200): void {
    for (const res of this.#hanging) {
      res.writeHead(status).end('released');
      this.inFlight--;
    }
    this.#hanging.clear();
  }

  async close(): Promise<void> {
    for (const res of this.#hanging) res.destroy();
    this.#hanging.clear();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    let body: any = null;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      body = null;
    }
    const r: Received = { headers: req.headers, raw, body, at: performance.now() };
    this.received.push(r);
    for (const w of [...this.#waiters]) {
      if (this.received.length >= w.n) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve();
      }
    }
    const a = this.answer(r);
    if ('hang' in a) {
      this.#hanging.add(res);
      res.on('close', () => {
        if (this.#hanging.delete(res)) this.inFlight--;
      });
      return;
    }
    this.inFlight--;
    res.writeHead(a.status, a.headers ?? {}).end(a.body ?? '');
  }
}
