/**
 * The client side of the join storm (bench/storm.ts and its teacher and flooder processes): HTTP over
 * undici keep-alive pools, one per node, and room sockets with `ws`, spread over the nodes the way
 * a load balancer in front of them would (round robin per request and per socket).
 */
import { Pool } from 'undici';
import WebSocket from 'ws';

export interface HttpResult {
  status: number;
  /** the parsed JSON body (null when not JSON) */
  body: any;
  ms: number;
}

/** A failed step: what a report counts it as (an HTTP status and error code, a close code, a timeout). */
export class StepError extends Error {
  constructor(
    readonly step: string,
    readonly code: string,
    message?: string,
  ) {
    super(message ?? `${step}: ${code}`);
  }
}

/** The nodes behind one address, as a round-robin load balancer sees them. */
export class Nodes {
  readonly urls: string[];
  readonly #pools: Pool[];
  #http = 0;
  #ws = 0;

  /**
   * A connection idle for 4 s is closed by the client: uWebSockets closes idle HTTP connections after
   * 10 s, and a request sent on one just as the server closes it fails (ECONNRESET) through no fault of
   * either side, which a storm would count as an error.
   */
  constructor(urls: string[], connectionsPerNode: number) {
    this.urls = urls;
    this.#pools = urls.map((u) => new Pool(u, { connections: connectionsPerNode, pipelining: 1, keepAliveTimeout: 4_000, keepAliveMaxTimeout: 4_000 }));
  }

  /** The node the next request goes to. */
  nextHttp(): number {
    return this.#http++ % this.urls.length;
  }

  /** The node the next socket goes to. */
  nextWs(): number {
    return this.#ws++ % this.urls.length;
  }

  /** One JSON request to the next node; the time from sending to the whole body read. */
  async request(method: 'GET' | 'POST', path: string, opts: { body?: unknown; headers?: Record<string, string>; node?: number; timeoutMs?: number } = {}): Promise<HttpResult> {
    const node = opts.node ?? this.nextHttp();
    const headers: Record<string, string> = { ...opts.headers };
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const t0 = performance.now();
    const res = await this.#pools[node]!.request({
      method,
      path,
      headers,
      ...(body !== undefined ? { body } : {}),
      headersTimeout: opts.timeoutMs ?? 30_000,
      bodyTimeout: opts.timeoutMs ?? 30_000,
    });
    const text = await res.body.text();
    const ms = performance.now() - t0;
    let parsed: any = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.statusCode, body: parsed, ms };
  }

  /** A room socket URL on node `node`: the path of the `mediaUrl` the API answered, with the token. */
  socketUrl(node: number, mediaUrl: string, token: string): string {
    const u = new URL(mediaUrl);
    const base = new URL(this.urls[node]!);
    return `ws://${base.host}${u.pathname}?token=${encodeURIComponent(token)}&device=web`;
  }

  async close(): Promise<void> {
    await Promise.all(this.#pools.map((p) => p.close().catch(() => {})));
  }
}

/** A request that must answer 2xx; anything else is a StepError with the status and the API's error code. */
export async function ok(step: string, p: Promise<HttpResult>): Promise<HttpResult> {
  let r: HttpResult;
  try {
    r = await p;
  } catch (err) {
    const e = err as { code?: string; name?: string; message?: string };
    throw new StepError(step, e.code ?? e.name ?? 'error', `${step}: ${e.message}`);
  }
  if (r.status < 200 || r.status > 299) throw new StepError(step, `${r.status} ${r.body?.error?.code ?? ''}`.trim(), `${step}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  return r;
}

const TYPE_AT = Buffer.byteLength('{"type":"');

/**
 * The `type` of a server message without parsing it: every message the room socket sends is an object
 * whose first key is `type` (JSON.stringify keeps insertion order). Falls back to parsing.
 */
export function messageType(raw: Buffer): string {
  if (raw[0] === 0x7b && raw[1] === 0x22 && raw[2] === 0x74 && raw[3] === 0x79 && raw[4] === 0x70 && raw[5] === 0x65 && raw[6] === 0x22 && raw[7] === 0x3a && raw[8] === 0x22) {
    const end = raw.indexOf(0x22, TYPE_AT);
    if (end > 0) return raw.toString('latin1', TYPE_AT, end);
  }
  try {
    return String(JSON.parse(raw.toString('utf8')).type);
  } catch {
    return '';
  }
}

export interface OpenedSocket {
  ws: WebSocket;
  /** the message that ended the wait, parsed */
  message: any;
  ms: number;
}

/**
 * Opens a room socket and resolves when a message of one of `until` types arrives (`joined`, `admitted`,
 * …); `error`/`denied`/`expired` messages, a refused upgrade, a close or `timeoutMs` reject with a StepError.
 * Messages before that are skipped without parsing unless `keep` asks for them.
 */
export function openSocket(step: string, url: string, until: string[], opts: { headers?: Record<string, string>; timeoutMs?: number; keep?: (type: string, raw: Buffer) => void } = {}): Promise<OpenedSocket> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: opts.headers ?? {}, perMessageDeflate: false });
    let done = false;
    const fail = (code: string, message: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      ws.removeAllListeners('message');
      ws.on('error', () => {});
      ws.terminate();
      reject(new StepError(step, code, `${step}: ${message}`));
    };
    const timer = setTimeout(() => fail('timeout', `no ${until.join('/')} in ${opts.timeoutMs ?? 30_000} ms`), opts.timeoutMs ?? 30_000);
    ws.on('message', (data: Buffer) => {
      if (done) return;
      const type = messageType(data);
      if (until.includes(type)) {
        done = true;
        clearTimeout(timer);
        ws.removeAllListeners('message');
        resolve({ ws, message: JSON.parse(data.toString('utf8')), ms: performance.now() - t0 });
        return;
      }
      if (type === 'error' || type === 'denied' || type === 'expired') {
        const m = JSON.parse(data.toString('utf8'));
        return fail(m.error?.code ?? type, JSON.stringify(m).slice(0, 300));
      }
      opts.keep?.(type, data);
    });
    ws.once('unexpected-response', (_req, res) => fail(`upgrade ${res.statusCode}`, `upgrade refused: ${res.statusCode}`));
    ws.once('close', (code) => fail(`close ${code}`, `closed with ${code}`));
    ws.once('error', (err) => fail((err as { code?: string }).code ?? 'socket error', err.message));
  });
}

/**
 * Commands by id on an open socket, for clients that need acks (media signaling, host commands): every
 * message is parsed; acks resolve their command, the rest go to `onMessage`.
 */
export class Commands {
  #seq = 0;
  readonly #pending = new Map<string, { resolve: (m: any) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  onMessage: (m: any) => void = () => {};

  constructor(
    readonly ws: WebSocket,
    readonly timeoutMs = 30_000,
  ) {
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8'));
      if (m.type === 'ack' && typeof m.id === 'string') {
        const p = this.#pending.get(m.id);
        if (p) {
          this.#pending.delete(m.id);
          clearTimeout(p.timer);
          if (m.ok) p.resolve(m);
          else p.reject(new StepError(String(m.id).replace(/-\d+$/, ''), m.error?.code ?? 'refused', `${m.id}: ${JSON.stringify(m.error).slice(0, 300)}`));
        }
        return;
      }
      this.onMessage(m);
    });
    ws.once('close', (code) => {
      for (const [id, p] of this.#pending) {
        clearTimeout(p.timer);
        p.reject(new StepError(id.replace(/-\d+$/, ''), `close ${code}`));
      }
      this.#pending.clear();
    });
  }

  /** Sends `msg` and resolves with its ack; a refusal rejects with a StepError named after the command. */
  ask = (msg: Record<string, unknown>): Promise<any> => {
    const id = `${String(msg.type)}-${++this.#seq}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new StepError(String(msg.type), 'timeout', `${String(msg.type)}: no ack in ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ ...msg, id }));
    });
  };
}
