import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import uws from 'uWebSockets.js';
import { z } from 'zod';
import type { App } from '../src/app.ts';
import { AppError, toAppError } from '../src/errors.ts';
import { hasScope } from '../src/scopes.ts';
import type { RateLimitResult } from '../src/cluster/rate-limit.ts';
import { fullPath, type Reply, type RequestInfo, type Route } from './route.ts';
import { validationError } from './validation.ts';

export interface HttpServer {
  port: number;
  close(): void;
}

const STATUS_LINE: Record<number, string> = {};
const statusLine = (s: number): string => (STATUS_LINE[s] ??= `${s} ${STATUS_CODES[s] ?? ''}`.trim());
const REQUEST_ID = /^[\w.:-]{1,128}$/;
const BODY_METHODS = new Set(['post', 'patch', 'put', 'delete']);

interface Matcher {
  segments: string[];
  methods: string[];
}

/**
 * Serves every route on uWebSockets.js. One pipeline for all of them: request id, body cap, content type,
 * JSON parsing, authentication, rate limit headers, scope, zod validation, idempotency, error envelope.
 */
export function startHttp(app: App, routes: Route[], opts: { host: string; port: number }): Promise<HttpServer> {
  const server = uws.App();
  const matchers = new Map<string, Matcher>();

  for (const r of routes) {
    const path = fullPath(r.spec);
    const paramNames = [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    const m = matchers.get(path) ?? { segments: path.split('/'), methods: [] };
    m.methods.push(r.spec.method.toUpperCase());
    matchers.set(path, m);
    const register = { get: server.get, post: server.post, patch: server.patch, delete: server.del }[r.spec.method].bind(server);
    register(path, (res: uws.HttpResponse, req: uws.HttpRequest) => {
      const info = readRequest(app, res, req);
      const raw: string[] = paramNames.map((_, i) => req.getParameter(i) ?? '');
      const aborted = { v: false };
      res.onAborted(() => {
        aborted.v = true;
      });
      const max = r.spec.maxBodyBytes ?? app.config.AULA_MAX_BODY_BYTES;
      readBody(res, info, max, aborted, (body, tooLarge) => {
        void handle(app, r, res, info, raw, paramNames, body, tooLarge, max, aborted);
      });
    });
  }

  server.any('/*', (res, req) => {
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

function readRequest(app: App, res: uws.HttpResponse, req: uws.HttpRequest): RequestInfo {
  const headers: Record<string, string> = {};
  req.forEach((k, v) => {
    headers[k] = v;
  });
  const given = headers['x-request-id'];
  let ip = Buffer.from(res.getRemoteAddressAsText()).toString();
  if (app.config.AULA_TRUST_PROXY && headers['x-forwarded-for']) ip = headers['x-forwarded-for'].split(',')[0]!.trim();
  return {
    method: req.getMethod().toUpperCase(),
    path: req.getUrl(),
    query: new URLSearchParams(req.getQuery() ?? ''),
    headers,
    ip,
    requestId: given && REQUEST_ID.test(given) ? given : `req_${randomUUID().replaceAll('-', '')}`,
  };
}

function readBody(
  res: uws.HttpResponse,
  info: RequestInfo,
  max: number,
  aborted: { v: boolean },
  done: (body: Buffer, tooLarge: boolean) => void,
): void {
  if (!BODY_METHODS.has(info.method.toLowerCase())) return done(Buffer.alloc(0), false);
  const declared = Number(info.headers['content-length'] ?? 0);
  if (declared > max) return done(Buffer.alloc(0), true);
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  res.onData((ab, isLast) => {
    if (finished || aborted.v) return;
    size += ab.byteLength;
    if (size > max) {
      finished = true;
      return done(Buffer.alloc(0), true);
    }
    chunks.push(Buffer.from(ab.slice(0)));
    if (isLast) {
      finished = true;
      done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), false);
    }
  });
}

async function handle(
  app: App,
  r: Route,
  res: uws.HttpResponse,
  info: RequestInfo,
  rawParams: string[],
  paramNames: string[],
  body: Buffer,
  tooLarge: boolean,
  maxBody: number,
  aborted: { v: boolean },
): Promise<void> {
  const spec = r.spec;
  const log = app.log.child({ reqId: info.requestId });
  const started = performance.now();
  let limit: RateLimitResult | null = null;
  let reply: Reply;
  let error: AppError | null = null;
  try {
    if (tooLarge) throw new AppError('payload_too_large', { details: { limitBytes: maxBody }, headers: { Connection: 'close' } });

    // Per-IP budgets count every attempt, credential or not; per-key budgets need the key first.
    if (spec.ipLimit) limit = checkLimit(await app.rateLimits.consume(spec.ipLimit.name, info.ip, spec.ipLimit.perMinute));
    const apiKey = spec.auth === 'apiKey' ? await app.services.apiKeys.authenticate(info.headers.authorization) : null;
    const session = spec.auth === 'session' ? app.services.sessions.authenticate(info.headers.authorization) : null;
    if (apiKey) limit = checkLimit(await app.rateLimits.consume('key', apiKey.keyId, apiKey.rateLimitPerMinute));
    if (apiKey && spec.scope && !hasScope(apiKey.scopes, spec.scope)) {
      throw new AppError('insufficient_scope', { details: { required: spec.scope, granted: [...apiKey.scopes] } });
    }

    const params: Record<string, string> = {};
    for (let i = 0; i < paramNames.length; i++) {
      try {
        params[paramNames[i]!] = decodeURIComponent(rawParams[i]!);
      } catch {
        throw new AppError('bad_request', { message: `Path parameter ${paramNames[i]} is not valid percent-encoding.` });
      }
      if (params[paramNames[i]!]!.includes('\u0000')) {
        throw new AppError('validation_failed', { details: { fields: [{ field: paramNames[i], in: 'path', code: 'invalid_string', message: 'must not contain the NUL character' }] } });
      }
    }
    const parsedParams = spec.params ? parse(spec.params, params, 'path') : params;
    const parsedQuery = spec.query ? parse(spec.query, Object.fromEntries(info.query), 'query') : undefined;
    let json: unknown = undefined;
    if (spec.body) {
      json = parseJson(body, info.headers['content-type']);
    }
    const parsedBody = spec.body ? parse(spec.body, json ?? {}, 'body') : undefined;

    const ctx = {
      app,
      req: info,
      params: parsedParams,
      query: parsedQuery,
      body: parsedBody,
      log,
      db: app.sql,
      apiKey,
      session,
    };
    const idemKey = info.headers['idempotency-key'];
    if (apiKey && info.method === 'POST' && idemKey !== undefined) {
      reply = await app.services.idempotency.run(
        { scope: apiKey.keyId, key: idemKey, method: info.method, path: info.path, body: json ?? null },
        (db) => r.handler({ ...ctx, db } as never),
      );
    } else {
      reply = await r.handler(ctx as never);
    }
  } catch (err) {
    if (err instanceof RateLimitedError) limit = err.limit;
    error = toAppError(err);
    if (error.status >= 500) log.error({ err: (err as Error)?.cause ?? err, route: spec.path }, 'request failed');
    reply = { data: null };
  }

  if (aborted.v) return;
  res.cork(() => {
    if (error) return sendError(app, res, info, error, log, limit);
    const status = reply.status ?? spec.status ?? 200;
    res.writeStatus(statusLine(status));
    writeLimitHeaders(res, limit);
    res.writeHeader('X-Request-Id', info.requestId);
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.writeHeader(k, v);
    if (reply.raw) {
      res.writeHeader('Content-Type', reply.raw.contentType);
      res.end(reply.raw.body);
    } else {
      res.writeHeader('Content-Type', 'application/json');
      const out = spec.list ? { data: reply.data, nextCursor: reply.nextCursor ?? null } : { data: reply.data };
      res.end(JSON.stringify(out));
    }
    if (log.isLevelEnabled('info')) {
      log.info({ method: info.method, path: info.path, status, ms: +(performance.now() - started).toFixed(2) }, 'request');
    }
  });
}

class RateLimitedError extends AppError {
  constructor(readonly limit: RateLimitResult) {
    super('rate_limited', {
      details: { limit: limit.limit, retryAfterSeconds: limit.retryAfterSeconds },
      headers: { 'Retry-After': String(limit.retryAfterSeconds) },
    });
  }
}

function checkLimit(limit: RateLimitResult): RateLimitResult {
  if (!limit.allowed) throw new RateLimitedError(limit);
  return limit;
}

/** uWS sends the status line with the first header, so the status is always written first. */
function writeLimitHeaders(res: uws.HttpResponse, limit: RateLimitResult | null): void {
  if (!limit) return;
  res.writeHeader('X-RateLimit-Limit', String(limit.limit));
  res.writeHeader('X-RateLimit-Remaining', String(limit.remaining));
  res.writeHeader('X-RateLimit-Reset', String(limit.resetAt));
}

function sendError(
  app: App,
  res: uws.HttpResponse,
  info: RequestInfo,
  err: AppError,
  log = app.log.child({ reqId: info.requestId }),
  limit: RateLimitResult | null = null,
): void {
  res.writeStatus(statusLine(err.status));
  writeLimitHeaders(res, limit);
  res.writeHeader('X-Request-Id', info.requestId);
  res.writeHeader('Content-Type', 'application/json');
  for (const [k, v] of Object.entries(err.headers)) res.writeHeader(k, v);
  const close = err.headers.Connection === 'close';
  res.end(JSON.stringify(err.toBody(info.requestId)), close);
  if (log.isLevelEnabled('info')) log.info({ method: info.method, path: info.path, status: err.status, code: err.code }, 'request');
}

function parseJson(body: Buffer, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json' && !mediaType?.endsWith('+json')) {
    throw new AppError('unsupported_media_type', { details: { contentType: contentType ?? null } });
  }
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new AppError('invalid_json', { details: { reason: (err as Error).message } });
  }
  const nul = findNul(value, '');
  if (nul !== null) {
    throw new AppError('validation_failed', {
      details: { fields: [{ field: nul || '(root)', in: 'body', code: 'invalid_string', message: 'must not contain the NUL character' }] },
    });
  }
  return value;
}

/** Postgres text cannot hold U+0000, so no string anywhere in a body may carry it. Iterative: bodies may nest deeply. */
function findNul(root: unknown, _path: string): string | null {
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return path;
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        const p = path ? `${path}.${k}` : k;
        if (k.includes('\u0000')) return p;
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
