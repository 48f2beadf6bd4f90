/**
 * One webhook delivery attempt over HTTP, with the target policy enforced on the socket.
 *
 * - The URL is checked again (scheme, userinfo, name rules, IP literals) on every attempt.
 * - The connection goes through an undici `Agent` whose connector refuses forbidden IP literals and
 *   resolves names with `vettedLookup`: every address the name has is classified when the socket is
 *   opened, and the socket is given only vetted addresses. A name that resolved to a public address
 *   when the endpoint was saved and resolves to 127.0.0.1 now (DNS rebinding), or that resolves to a
 *   public and a private address, never reaches the forbidden one.
 * - Redirects are never followed (undici's `request` does not follow them without the redirect
 *   interceptor, which is not installed): a 3xx is a failure of kind `redirect`.
 * - One deadline (default the spec's 10 seconds) covers connect, response headers and the body read.
 * - At most the first 1 KB of the response body is read; then the stream is destroyed.
 * - Environment proxies are not used (`Agent`, not `EnvHttpProxyAgent`), so nothing but the vetted
 *   address is ever dialled.
 */
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { Agent, buildConnector, request } from 'undici';
import { systemClock, type Clock } from '../../core/clock.ts';
import { checkTargetSyntax, classifyAddress, TargetRefusedError, vettedLookup, type LookupFn } from './targets.ts';

export const DELIVERY_TIMEOUT_MS = 10_000;
export const RESPONSE_BODY_LIMIT = 1024;

export type DeliveryErrorKind = 'ssrf' | 'dns' | 'timeout' | 'tls' | 'connection' | 'redirect' | 'status';

export interface DeliveryResult {
  /** True for any 2xx received, with its (partial) body, within the deadline. */
  ok: boolean;
  /** The response status, when one was received. */
  status?: number;
  durationMs: number;
  /**
   * The first 1024 bytes of the response body, decoded as UTF-8 (a cut character becomes U+FFFD, and
   * so does a NUL, which Postgres text cannot hold).
   */
  responseBody: string;
  error?: { kind: DeliveryErrorKind; message: string };
  /** From `Retry-After` (seconds, or an HTTP date) on a 429 or 503; whole seconds from now, at least 0. */
  retryAfterSeconds?: number;
}

export interface DeliverOptions {
  url: string | URL;
  /** The exact body that was signed. */
  body: string;
  /** Usually `signatureHeaders(...)`. */
  headers: Record<string, string>;
  /** The deadline over connect, headers and body. Default 10 000 (the spec's receiver limit). */
  timeoutMs?: number;
  /** `allowPrivateTargets(config)`: never true in production. */
  allowPrivate?: boolean;
  /** Name resolution, injectable for tests; default `dns.lookup(host, { all: true })`. */
  lookup?: LookupFn;
  /** For durations and `Retry-After` dates; default the system clock. */
  clock?: Clock;
  /**
   * Extra trust anchors (PEM) besides Node's bundled CAs, for tests and self-hosted private CAs.
   * Certificate verification itself is never turned off.
   */
  ca?: string | Buffer | Array<string | Buffer>;
  /**
   * A `vettedAgent` to send through, kept by the caller so its connections are reused; `allowPrivate`,
   * `lookup` and `ca` must be the ones it was made with. Without it, each attempt makes its own and
   * closes it.
   */
  agent?: Agent;
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA', 'ESERVFAIL', 'ENONAME', 'EREFUSED']);
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT', 'ETIMEOUT']);
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_)|CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|HOSTNAME_MISMATCH|^EPROTO$/;

/** Every error in a cause / AggregateError chain, outermost first. */
function chain(err: unknown): Array<Error & { code?: string }> {
  const out: Array<Error & { code?: string }> = [];
  const walk = (e: unknown, depth: number) => {
    if (!(e instanceof Error) || depth > 8) return;
    out.push(e);
    if (e instanceof AggregateError) for (const inner of e.errors) walk(inner, depth + 1);
    walk((e as { cause?: unknown }).cause, depth + 1);
  };
  walk(err, 0);
  return out;
}

/** Sorts a failure into the spec's kinds: SSRF refusal, DNS, timeout, TLS, else connection. */
export function errorKind(err: unknown): DeliveryErrorKind {
  const errors = chain(err);
  const codes = errors.map((e) => (typeof e.code === 'string' ? e.code : ''));
  if (errors.some((e) => e instanceof TargetRefusedError) || codes.includes('ERR_AULA_SSRF')) return 'ssrf';
  if (codes.some((c) => TIMEOUT_CODES.has(c))) return 'timeout';
  if (codes.some((c) => DNS_CODES.has(c))) return 'dns';
  if (codes.some((c) => c !== '' && TLS_CODE.test(c))) return 'tls';
  return 'connection';
}

function describe(err: unknown): string {
  const errors = chain(err);
  const main = errors.find((e) => typeof e.code === 'string' && e.code !== '') ?? errors[0];
  if (!main) return String(err);
  const text = main.message.split('\n')[0]!.trim();
  return main.code && !text.includes(main.code) ? `${main.code}: ${text}` : text;
}

/** `Retry-After` as whole seconds from now: delay-seconds or an IMF-fixdate HTTP date (a past date is 0); anything else is ignored. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  // An HTTP date, in the IMF-fixdate form senders must use (RFC 9110 section 5.6.7).
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** Handed to `agent.destroy` once an attempt is over; nothing is pending on the agent by then. */
const AGENT_DONE = Object.assign(new Error('the delivery attempt is over'), { stack: '' });

class DeadlineError extends Error {
  override name = 'DeadlineError';
  readonly code = 'ETIMEDOUT';
}

export interface VettedAgentOptions {
  allowPrivate: boolean;
  /** Connect timeout, and the headers and body timeouts of its requests. */
  timeoutMs?: number;
  lookup?: LookupFn;
  ca?: string | Buffer | Array<string | Buffer>;
  /** Connections it may hold open at once (default 1). */
  connections?: number;
}

/**
 * An undici `Agent` that only ever opens sockets to vetted addresses: IP literals are classified
 * before any socket exists, names are resolved and every address classified by `vettedLookup` as the
 * socket is opened. A connection it keeps alive stays pinned to the address it was vetted for; every
 * new connection is vetted again (so DNS rebinding between two connections reaches nothing forbidden).
 */
export function vettedAgent(o: VettedAgentOptions): Agent {
  const timeoutMs = o.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const base = buildConnector({
    timeout: timeoutMs,
    maxCachedSessions: 0,
    rejectUnauthorized: true,
    ...(o.ca ? { ca: [...rootCertificates, ...(Array.isArray(o.ca) ? o.ca : [o.ca])] } : {}),
    lookup: vettedLookup({ allowPrivate: o.allowPrivate, ...(o.lookup ? { lookup: o.lookup } : {}) }),
  });
  const connector: buildConnector.connector = (options, callback) => {
    // net.connect skips `lookup` for an IP literal, so literals are judged here, before any socket exists.
    const host = options.hostname.startsWith('[') ? options.hostname.slice(1, -1) : options.hostname;
    if (isIP(host)) {
      const c = classifyAddress(host, { allowPrivate: o.allowPrivate });
      if (!c.allowed) {
        queueMicrotask(() => callback(new TargetRefusedError(`the address ${c.address} is not allowed (${c.range})`, c.range, c.address), null));
        return;
      }
    }
    base(options, callback);
  };
  return new Agent({ connect: connector, connections: o.connections ?? 1, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

/** Closes an agent made by `vettedAgent` (its idle connections; nothing is pending on it by then). */
export const closeAgent = (agent: Agent): Promise<void> => agent.destroy(AGENT_DONE).catch(() => undefined);

/** One attempt: never throws; every outcome is a `DeliveryResult`. */
export async function deliver(opts: DeliverOptions): Promise<DeliveryResult> {
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const allowPrivate = opts.allowPrivate === true;
  const started = clock.now();
  const elapsed = () => Math.max(0, clock.now() - started);

  const target = checkTargetSyntax(opts.url, { allowPrivate });
  if (!target.ok) {
    return { ok: false, durationMs: elapsed(), responseBody: '', error: { kind: 'ssrf', message: target.message } };
  }

  const agent = opts.agent ?? vettedAgent({ allowPrivate, timeoutMs, ...(opts.lookup ? { lookup: opts.lookup } : {}), ...(opts.ca ? { ca: opts.ca } : {}) });

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DeadlineError(`no complete response within ${timeoutMs} ms`));
  }, timeoutMs);

  let status: number | undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  const bodyText = () => Buffer.concat(chunks, size).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8').replaceAll('\0', '\ufffd');
  try {
    const res = await request(target.url, {
      method: 'POST',
      headers: opts.headers,
      body: opts.body,
      dispatcher: agent,
      signal: controller.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    status = res.statusCode;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_BODY_LIMIT) break; // leaving the loop destroys the stream: the rest is never read
    }
    res.body.destroy();
    const responseBody = bodyText();

    const result: DeliveryResult = { ok: status >= 200 && status < 300, status, durationMs: elapsed(), responseBody };
    if (status === 429 || status === 503) {
      const after = parseRetryAfter(res.headers['retry-after'], clock.now());
      if (after !== undefined) result.retryAfterSeconds = after;
    }
    if (status >= 300 && status < 400) {
      const location = String(res.headers.location ?? '').slice(0, 200); // the receiver's text: kept short
      result.error = { kind: 'redirect', message: `the receiver answered ${status}${location ? ` to ${location}` : ''}; redirects are not followed` };
    } else if (!result.ok) {
      result.error = { kind: 'status', message: `the receiver answered ${status}` };
    }
    return result;
  } catch (err) {
    const kind = timedOut ? 'timeout' : errorKind(err);
    const message = timedOut ? `no complete response within ${timeoutMs} ms` : describe(err);
    return { ok: false, ...(status === undefined ? {} : { status }), durationMs: elapsed(), responseBody: bodyText(), error: { kind, message } };
  } finally {
    clearTimeout(timer);
    // with an error of our own: undici would otherwise build (and format the stack of) a new one each attempt
    if (!opts.agent) await agent.destroy(AGENT_DONE).catch(() => undefined);
  }
}
