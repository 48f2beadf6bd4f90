import { isUtf8 } from 'node:buffer';
import type uws from 'uWebSockets.js';
import type { App } from '../../src/services/app.ts';
import type { Db } from '../../src/platform/db/index.ts';
import { clientAddress, peerIsTrustedProxy, type TrustProxy } from '../../src/platform/client-address.ts';
import { randomString } from '../../src/platform/crypto.ts';
import type { Logger } from '../../src/platform/logger.ts';
import type { ApiPrincipal } from '../../src/services/api-keys.ts';
import type { AdminPrincipal } from '../../src/services/admins.ts';
import type { SessionPrincipal } from '../../src/services/sessions.ts';
import { AppError } from '../../src/core/errors.ts';
import type { Ctx, RequestInfo } from '../route.ts';

const REQUEST_ID = /^[\w.:-]{1,128}$/;
export const BODY_METHODS = new Set(['post', 'patch', 'put', 'delete']);
/** What a header given twice reads as, where that is not allowed. */
const DUPLICATE = '\u0000duplicate';
/** Request ids: 64 random bits per process, then a counter; unique, and no CSPRNG draw per request. */
const REQUEST_ID_PREFIX = `req_${randomString(8, 'hex')}`;
let requestCount = 0;
const nextRequestId = (): string => REQUEST_ID_PREFIX + (++requestCount).toString(16).padStart(16, '0');

/**
 * A request as the pipeline and handlers see it. What only some requests need is worked out on first
 * use: the parsed query string, the client address (from `res`, which stays valid until the response
 * ends or the client goes away), and the per-request child logger (most requests never log).
 */
export class Request implements RequestInfo {
  /** Set when the client went away; nothing may touch `res` after that. */
  aborted = false;
  /** Told when the client goes away (a streamed file stops reading). */
  onAbort: (() => void) | null = null;
  #query: URLSearchParams | null = null;
  #ip: string | null = null;
  #log: Logger | null = null;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly rawQuery: string,
    readonly headers: Record<string, string>,
    readonly requestId: string,
    private readonly res: uws.HttpResponse,
    private readonly trustProxy: TrustProxy,
  ) {}

  get query(): URLSearchParams {
    return (this.#query ??= new URLSearchParams(this.rawQuery));
  }

  /** The client's address: the socket's peer, or what the trusted proxies vouch for (AULA_TRUST_PROXY). */
  get ip(): string {
    if (this.#ip === null) {
      const peer = this.aborted ? '' : Buffer.from(this.res.getRemoteAddressAsText()).toString();
      this.#ip = clientAddress(peer, this.headers['x-forwarded-for'], this.trustProxy);
    }
    return this.#ip;
  }

  logger(root: Logger): Logger {
    return (this.#log ??= root.child({ reqId: this.requestId }));
  }
}

/** What a handler gets; `log` is the request's child logger, made when first asked for. */
export class Context implements Ctx<unknown, unknown, unknown> {
  constructor(
    readonly app: App,
    readonly req: Request,
    readonly params: unknown,
    readonly query: unknown,
    readonly body: unknown,
    readonly db: Db,
    readonly apiKey: ApiPrincipal | null,
    readonly session: SessionPrincipal | null,
    readonly admin: AdminPrincipal | null,
  ) {}

  get log(): Logger {
    return this.req.logger(this.app.log);
  }
}

export function readRequest(app: App, res: uws.HttpResponse, req: uws.HttpRequest, method = req.getMethod().toUpperCase()): Request {
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    // two Content-Length headers disagree on where the body ends (a request-smuggling shape): refused
    headers[k] = k === 'content-length' && headers[k] !== undefined ? DUPLICATE : v;
  });
  // a request id is taken from a trusted proxy (the load balancer's trace id), never from a client
  const given = headers['x-request-id'];
  const trusted = given !== undefined && REQUEST_ID.test(given) && peerIsTrustedProxy(Buffer.from(res.getRemoteAddressAsText()).toString(), app.config.AULA_TRUST_PROXY);
  return new Request(
    method,
    req.getUrl(),
    req.getQuery() ?? '',
    headers,
    trusted ? given : nextRequestId(),
    res,
    app.config.AULA_TRUST_PROXY,
  );
}

/**
 * How much of a body over the cap is read, and dropped, before the 413 goes out. Clients such as Node's
 * fetch and curl write the whole body before they read the answer: answered and cut off at once, they
 * met EPIPE or a reset instead of the 413. A body declared larger, or a chunked one that runs past it, is
 * answered at once and its connection closed.
 */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Reads the whole body: a one-chunk body (the usual case) is decoded straight to a string, longer ones are
 * joined first. One over `max` is read to its end and dropped (up to DRAIN_MAX_BYTES), then refused.
 */
export function readBody(
  res: uws.HttpResponse,
  info: Request,
  hasBody: boolean,
  max: number,
  done: (body: Buffer | string, tooLarge: boolean) => void,
): void {
  if (!hasBody) return done('', false);
  const declared = Number(info.headers['content-length'] ?? 0);
  if (declared > DRAIN_MAX_BYTES) return done('', true);
  let over = declared > max;
  let chunks: Buffer[] | null = null;
  let size = 0;
  let finished = false;
  res.onData((ab, isLast) => {
    if (finished || info.aborted) return;
    size += ab.byteLength;
    if (over || size > max) {
      over = true;
      chunks = null;
      if (isLast || size > DRAIN_MAX_BYTES) {
        finished = true;
        done('', true);
      }
      return;
    }
    if (isLast && !chunks) {
      finished = true;
      // uWS reuses `ab` once this callback returns: the string is a copy (bytes that are not UTF-8 stay bytes, for parseJson to refuse)
      const view = Buffer.from(ab);
      return done(isUtf8(view) ? view.toString('utf8') : Buffer.from(ab.slice(0)), false);
    }
    (chunks ??= []).push(Buffer.from(ab.slice(0)));
    if (isLast) {
      finished = true;
      done(Buffer.concat(chunks), false);
    }
  });
}

/** Refuses a request whose body cannot be taken as sent: Content-Length given twice, or a body over the cap. */
export function assertReadable(info: Request, tooLarge: boolean, maxBody: number): void {
  if (info.headers['content-length'] === DUPLICATE) {
    throw new AppError('bad_request', { message: 'Content-Length was given more than once.', headers: { Connection: 'close' } });
  }
  if (tooLarge) throw new AppError('payload_too_large', { details: { limitBytes: maxBody }, headers: { Connection: 'close' } });
}
