import { isUtf8 } from 'node:buffer';
import { STATUS_CODES } from 'node:http';
import uws from 'uWebSockets.js';
import { z } from 'zod';
import type { App } from '../src/services/app.ts';
import type { Db } from '../src/platform/db/index.ts';
import { clientAddress, peerIsTrustedProxy, type TrustProxy } from '../src/platform/client-address.ts';
import { randomString } from '../src/platform/crypto.ts';
import type { Logger } from '../src/platform/logger.ts';
import type { ApiPrincipal } from '../src/services/api-keys.ts';
import type { AdminPrincipal } from '../src/services/admins.ts';
import type { SessionPrincipal } from '../src/services/sessions.ts';
import { AppError, validationError } from '../src/core/errors.ts';
import { toAppError } from '../src/platform/to-app-error.ts';
import type { RouteMeter } from '../src/platform/metrics.ts';
import { hasScope } from '../src/core/scopes.ts';
import type { RateLimitResult } from '../src/platform/cluster/rate-limit.ts';
import { CredentialGuard } from './credential-guard.ts';
import { fullPath, type Ctx, type Reply, type RequestInfo, type Route, type RouteSpec } from './route.ts';

export interface HttpServer {
  port: number;
  /** Stops listening and closes every connection. */
  close(): void;
}

const STATUS_LINE: Record<number, string> = {};
const statusLine = (s: number): string => (STATUS_LINE[s] ??= `${s} ${STATUS_CODES[s] ?? ''}`.trim());
const REQUEST_ID = /^[\w.:-]{1,128}$/;
const BODY_METHODS = new Set(['post', 'patch', 'put', 'delete']);
/** What a header given twice reads as, where that is not allowed. */
const DUPLICATE = '\u0000duplicate';
const NO_PARAMS: string[] = [];
/** Request ids: 64 random bits per process, then a counter; unique, and no CSPRNG draw per request. */
const REQUEST_ID_PREFIX = `req_${randomString(8, 'hex')}`;
let requestCount = 0;
const nextRequestId = (): string => REQUEST_ID_PREFIX + (++requestCount).toString(16).padStart(16, '0');

interface Matcher {
  segments: string[];
  methods: string[];
}

/**
 * Serves every route on uWebSockets.js. One pipeline for all of them: request id, body cap, content type,
 * JSON parsing, authentication, rate limit headers, scope, zod validation, idempotency, error envelope.
 */
export function startHttp(
  app: App,
  routes: Route[],
  opts: { host: string; port: number; extend?: (server: uws.TemplatedApp) => void },
): Promise<HttpServer> {
  const server = uws.App();
  opts.extend?.(server);
  const guard = new CredentialGuard(app.rateLimits, app.clock);
  const matchers = new Map<string, Matcher>();

  for (const r of routes) {
    const path = fullPath(r.spec);
    const paramNames = [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    const m = matchers.get(path) ?? { segments: path.split('/'), methods: [] };
    m.methods.push(r.spec.method.toUpperCase());
    matchers.set(path, m);
    const register = { get: server.get, post: server.post, patch: server.patch, delete: server.del }[r.spec.method].bind(server);
    const hasBody = BODY_METHODS.has(r.spec.method);
    const method = r.spec.method.toUpperCase();
    const meter = app.metrics.route(path, method);
    const serve = (res: uws.HttpResponse, req: uws.HttpRequest) => {
      // Everything read from `req` is read here: uWS frees it when this callback returns.
      const info = readRequest(app, res, req, method);
      let raw = NO_PARAMS;
      if (paramNames.length) {
        raw = new Array<string>(paramNames.length);
        for (let i = 0; i < raw.length; i++) raw[i] = req.getParameter(i) ?? '';
      }
      res.onAborted(() => {
        info.aborted = true;
      });
      // The per-IP limit needs the client address; read it now, while the connection is surely there.
      if (r.spec.ipLimit) void info.ip;
      const max = r.spec.maxBodyBytes ?? app.config.AULA_MAX_BODY_BYTES;
      readBody(res, info, hasBody, max, (body, tooLarge) => {
        // uWS cannot answer a request pipelined behind one still in progress: it closes the connection
        // and aborts the earlier one, all before this callback's tick ends. A request that changes
        // something starts on the next tick, so one whose answer could never be sent is not carried out.
        if (method === 'GET') void handle(app, guard, r, meter, res, info, raw, paramNames, body, tooLarge, max);
        else setImmediate(() => info.aborted || void handle(app, guard, r, meter, res, info, raw, paramNames, body, tooLarge, max));
      });
    };
    register(path, serve);
    // the same route with a trailing slash (`/api/v1/public/users/`), as clients and proxies often write it
    register(`${path}/`, serve);
  }

  server.any('/*', (res, req) => {
    const started = performance.now();
    const info = readRequest(app, res, req);
    res.onAborted(() => {});
    const segs = info.path.split('/');
    const allowed = [...matchers.values()]
      .filter((m) => m.segments.length === segs.length && m.segments.every((s, i) => s.startsWith(':') || s === segs[i]))
      .flatMap((m) => m.methods);
    const err = allowed.length
      ? new AppError('method_not_allowed', { details: { allowed }, headers: { Allow: allowed.join(', ') } })
      : new AppError('route_not_found', { details: { method: info.method, path: info.path } });
    res.cork(() => sendError(app, res, info, err));
    // every path no route matched shares one label: raw paths would make a series each
    app.metrics.route('unmatched', info.method).record(err.status, (performance.now() - started) / 1000);
  });

  return new Promise((resolve, reject) => {
    server.listen(opts.host, opts.port, (socket) => {
      if (!socket) return reject(new Error(`could not listen on ${opts.host}:${opts.port}`));
      resolve({
        port: uws.us_socket_local_port(socket),
        close: () => {
          uws.us_listen_socket_close(socket);
          (server as unknown as { close?: () => void }).close?.();
        },
      });
    });
  });
}

/**
 * A request as the pipeline and handlers see it. What only some requests need is worked out on first
 * use: the parsed query string, the client address (from `res`, which stays valid until the response
 * ends or the client goes away), and the per-request child logger (most requests never log).
 */
class Request implements RequestInfo {
  /** Set when the client went away; nothing may touch `res` after that. */
  aborted = false;
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
class Context implements Ctx<unknown, unknown, unknown> {
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

function readRequest(app: App, res: uws.HttpResponse, req: uws.HttpRequest, method = req.getMethod().toUpperCase()): Request {
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
function readBody(
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

async function handle(
  app: App,
  guard: CredentialGuard,
  r: Route,
  meter: RouteMeter,
  res: uws.HttpResponse,
  info: Request,
  rawParams: string[],
  paramNames: string[],
  body: Buffer | string,
  tooLarge: boolean,
  maxBody: number,
): Promise<void> {
  const spec = r.spec;
  const logsRequests = app.log.isLevelEnabled('info');
  const started = performance.now();
  let limit: RateLimitResult | null = null;
  let reply: Reply;
  let error: AppError | null = null;
  try {
    if (info.headers['content-length'] === DUPLICATE) {
      throw new AppError('bad_request', { message: 'Content-Length was given more than once.', headers: { Connection: 'close' } });
    }
    if (tooLarge) throw new AppError('payload_too_large', { details: { limitBytes: maxBody }, headers: { Connection: 'close' } });

    // Per-IP budgets count every attempt, credential or not; per-key budgets need the key first.
    if (spec.ipLimit) {
      const got = app.rateLimits.consume(spec.ipLimit.name, info.ip, spec.ipLimit.perMinute);
      limit = checkLimit(got instanceof Promise ? await got : got, spec.ipLimit.name);
    }
    let apiKey: ApiPrincipal | null = null;
    let admin: AdminPrincipal | null = null;
    // A credential not in the services' caches is looked up only for an address that has not sent too many unknown ones.
    const gate = () => guard.check(info.ip);
    if (spec.auth === 'apiKey') {
      const authorization = info.headers.authorization;
      if (authorization !== undefined && app.services.admins.isSessionBearer(authorization)) {
        // A signed-in admin on the public API: every scope, the plan's budget in a bucket of its own.
        const found = app.services.admins.authenticate(authorization, undefined, gate);
        admin = found instanceof Promise ? await guard.looked(found, info.ip) : found;
        apiKey = admin.api;
      } else {
        // A cached key comes back as a value, a lookup as a promise: await only that.
        const found = app.services.apiKeys.authenticate(authorization, gate);
        apiKey = found instanceof Promise ? await guard.looked(found, info.ip) : found;
      }
    } else if (spec.auth === 'admin') {
      const found = app.services.admins.authenticate(info.headers.authorization, info.headers.cookie, gate);
      admin = found instanceof Promise ? await guard.looked(found, info.ip) : found;
    }
    let session: SessionPrincipal | null = null;
    if (spec.auth === 'session') {
      session = app.services.sessions.authenticate(info.headers.authorization);
      await app.services.sessions.assertStanding(app.sql, session, spec.erasedAccount ?? 'refuse');
    }
    const caller = apiKey ?? admin?.api;
    if (caller) {
      // Most requests are answered from the points this node holds for the key: no await then.
      const got = app.rateLimits.consume('key', caller.rateKey, caller.rateLimitPerMinute);
      limit = checkLimit(got instanceof Promise ? await got : got, 'key');
    }
    if (apiKey && spec.scope && !hasScope(apiKey.scopes, spec.scope)) {
      throw new AppError('insufficient_scope', { details: { required: spec.scope, granted: [...apiKey.scopes] } });
    }
    // A cookie rides along on cross-site requests; a header the page read from our sign-in response does not.
    if (admin?.via === 'cookie' && info.method !== 'GET' && !app.services.admins.csrfMatches(admin, info.headers['x-csrf-token'])) {
      throw new AppError('csrf_failed');
    }

    const params: Record<string, string> = {};
    for (let i = 0; i < paramNames.length; i++) {
      try {
        params[paramNames[i]!] = rawParams[i]!.includes('%') ? decodeURIComponent(rawParams[i]!) : rawParams[i]!;
      } catch {
        throw new AppError('bad_request', { message: `Path parameter ${paramNames[i]} is not valid percent-encoding.` });
      }
      if (params[paramNames[i]!]!.includes('\u0000')) {
        throw new AppError('validation_failed', { details: { fields: [{ field: paramNames[i], in: 'path', code: 'invalid_string', message: 'must not contain the NUL character' }] } });
      }
    }
    // Checked before validation, and without looking the other organization up: the answer is the same
    // whether it exists or not.
    if (spec.auth === 'admin' && params.orgId !== undefined && params.orgId !== admin!.orgId) throw new AppError('org_mismatch');
    const parsedParams = spec.params ? parse(spec.params, params, 'path') : params;
    const parsedQuery = spec.query ? parse(spec.query, Object.fromEntries(info.query), 'query') : undefined;
    let json: unknown = undefined;
    if (spec.body) {
      json = parseJson(body, info.headers['content-type']);
    }
    const parsedBody = spec.body ? parse(spec.body, json ?? {}, 'body') : undefined;

    // Idempotency-Key on every authenticated POST: an API key's, or a signed-in admin's on either
    // surface (their keys share one scope: the admin's, as a public-API caller)
    const idemKey = info.headers['idempotency-key'];
    const idemScope = apiKey?.keyId ?? admin?.api.keyId;
    if (idemScope !== undefined && info.method === 'POST' && idemKey !== undefined) {
      reply = await app.services.idempotency.run(
        { scope: idemScope, key: idemKey, method: info.method, path: info.path, body: json ?? null },
        (db) => r.handler(new Context(app, info, parsedParams, parsedQuery, parsedBody, db, apiKey, session, admin) as never),
        spec.idempotency,
      );
    } else {
      const out = r.handler(new Context(app, info, parsedParams, parsedQuery, parsedBody, app.sql, apiKey, session, admin) as never);
      reply = out instanceof Promise ? await out : out;
    }
  } catch (err) {
    if (err instanceof RateLimitedError) limit = err.limit;
    error = toAppError(err);
    if (error.code === 'rate_limited') app.metrics.rateLimited(err instanceof RateLimitedError ? err.bucket : 'unknown-credential');
    if (error.status >= 500) info.logger(app.log).error({ err: (err as Error)?.cause ?? err, route: spec.path }, 'request failed');
    reply = { data: null };
  }

  if (info.aborted) return;
  res.cork(() => {
    if (error) {
      sendError(app, res, info, error, limit);
      meter.record(error.status, (performance.now() - started) / 1000);
      return;
    }
    const status = reply.status ?? spec.status ?? 200;
    res.writeStatus(statusLine(status));
    writeLimitHeaders(res, limit);
    res.writeHeader('X-Request-Id', info.requestId);
    const headers = reply.headers;
    if (headers) for (const k in headers) res.writeHeader(k, headers[k]!);
    if (reply.raw) {
      res.writeHeader('Content-Type', reply.raw.contentType);
      res.end(reply.raw.body);
    } else {
      res.writeHeader('Content-Type', 'application/json');
      if (reply.json !== undefined) res.end(reply.json);
      else res.end(JSON.stringify(spec.list ? { data: reply.data, nextCursor: reply.nextCursor ?? null } : { data: reply.data }));
    }
    const ms = performance.now() - started;
    meter.record(status, ms / 1000);
    if (logsRequests) info.logger(app.log).info({ method: info.method, path: info.path, status, ms: +ms.toFixed(2) }, 'request');
  });
}

class RateLimitedError extends AppError {
  /** `bucket`: which limit refused (the metrics' `limit` label). */
  constructor(
    readonly limit: RateLimitResult,
    readonly bucket: string,
  ) {
    super('rate_limited', {
      details: { limit: limit.limit, retryAfterSeconds: limit.retryAfterSeconds },
      headers: { 'Retry-After': String(limit.retryAfterSeconds) },
    });
  }
}

function checkLimit(limit: RateLimitResult, bucket: string): RateLimitResult {
  if (!limit.allowed) throw new RateLimitedError(limit, bucket);
  return limit;
}

/** uWS sends the status line with the first header, so the status is always written first. */
function writeLimitHeaders(res: uws.HttpResponse, limit: RateLimitResult | null): void {
  if (!limit) return;
  res.writeHeader('X-RateLimit-Limit', String(limit.limit));
  res.writeHeader('X-RateLimit-Remaining', String(limit.remaining));
  res.writeHeader('X-RateLimit-Reset', String(limit.resetAt));
}

function sendError(app: App, res: uws.HttpResponse, info: Request, err: AppError, limit: RateLimitResult | null = null): void {
  res.writeStatus(statusLine(err.status));
  writeLimitHeaders(res, limit);
  res.writeHeader('X-Request-Id', info.requestId);
  res.writeHeader('Content-Type', 'application/json');
  for (const [k, v] of Object.entries(err.headers)) res.writeHeader(k, v);
  // a 503 is always worth retrying: say when, unless the error said already
  if (err.status === 503 && err.headers['Retry-After'] === undefined) res.writeHeader('Retry-After', '1');
  const close = err.headers.Connection === 'close';
  res.end(JSON.stringify(err.toBody(info.requestId)), close);
  if (app.log.isLevelEnabled('info')) info.logger(app.log).info({ method: info.method, path: info.path, status: err.status, code: err.code }, 'request');
}

function parseJson(body: Buffer | string, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  if (contentType !== 'application/json') {
    const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
    if (mediaType !== 'application/json' && !mediaType?.endsWith('+json')) {
      throw new AppError('unsupported_media_type', { details: { contentType: contentType ?? null } });
    }
  }
  // toString would replace bytes that are not UTF-8 with U+FFFD: refused instead of stored changed
  if (typeof body !== 'string' && !isUtf8(body)) throw new AppError('invalid_json', { details: { reason: 'The body is not UTF-8.' } });
  const text = typeof body === 'string' ? body : body.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new AppError('invalid_json', { details: { reason: (err as Error).message } });
  }
  if (mayNestDeeperThan(text, MAX_JSON_DEPTH)) {
    const at = tooDeep(value, MAX_JSON_DEPTH);
    if (at !== null) {
      throw new AppError('validation_failed', { details: { fields: [{ field: at || '(root)', in: 'body', code: 'too_deep', message: `must not nest more than ${MAX_JSON_DEPTH} levels of objects and arrays` }] } });
    }
  }
  // In valid UTF-8, JSON text can carry U+0000 and lone surrogates only as escapes (\u0000, \ud800), so
  // without such a sequence there is nothing to look for.
  const bad = ESCAPES_TO_CHECK.test(text) ? findBadString(value) : null;
  if (bad !== null) {
    const message = bad.nul ? 'must not contain the NUL character' : 'must be valid Unicode (a lone UTF-16 surrogate is not)';
    throw new AppError('validation_failed', { details: { fields: [{ field: bad.path || '(root)', in: 'body', code: 'invalid_string', message }] } });
  }
  return value;
}

/** No request body of this API nests deeper; a deeper one would cost a stack to store or answer. */
export const MAX_JSON_DEPTH = 32;

/** Cheap first look: fewer opening brackets than the limit cannot nest past it. */
function mayNestDeeperThan(text: string, limit: number): boolean {
  let opens = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 0x7b || c === 0x5b) && ++opens > limit) return true;
  }
  return false;
}

/** The path of the first value nested deeper than `limit`, or null. Iterative. */
function tooDeep(root: unknown, limit: number): string | null {
  const stack: [unknown, string, number][] = [[root, '', 0]];
  while (stack.length) {
    const [v, path, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > limit) return path;
    for (const [k, child] of Object.entries(v)) stack.push([child, path ? `${path}.${k}` : k, depth + 1]);
  }
  return null;
}

const ESCAPES_TO_CHECK = /\\u(?:0000|[dD][89a-fA-F])/;
/** With the u flag a surrogate pair is one code point, so \p{Cs} matches only a lone half. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The first string (value or key) that Postgres cannot store as sent: one with U+0000, which text cannot
 * hold, or a lone UTF-16 surrogate, which would be stored as U+FFFD. Iterative: bodies may nest deeply.
 */
function findBadString(root: unknown): { path: string; nul: boolean } | null {
  const stack: [unknown, string][] = [[root, '']];
  const bad = (v: string) => v.includes('\u0000') || LONE_SURROGATE.test(v);
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (bad(v)) return { path, nul: v.includes('\u0000') };
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        const p = path ? `${path}.${k}` : k;
        if (bad(k)) return { path: p, nul: k.includes('\u0000') };
        stack.push([child, p]);
      }
    }
  }
  return null;
}

function parse<T extends z.ZodType>(schema: T, value: unknown, where: 'path' | 'query' | 'body'): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw validationError(r.error, where);
  return r.data;
}
