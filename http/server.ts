import uws from 'uWebSockets.js';
import type { App } from '../src/services/app.ts';
import { AppError } from '../src/core/errors.ts';
import { toAppError } from '../src/platform/to-app-error.ts';
import type { RouteMeter } from '../src/platform/metrics.ts';
import type { RateLimitResult } from '../src/platform/cluster/rate-limit.ts';
import { CredentialGuard } from './credential-guard.ts';
import { fullPath, type Reply, type Route } from './route.ts';
import { assertOwnOrg, assertScope, authenticate } from './pipeline/auth.ts';
import { decodeParams, parse, parseJson } from './pipeline/input.ts';
import { assertCsrf, ipBudget, keyBudget, RateLimitedError } from './pipeline/limits.ts';
import { sendError, sendReply } from './pipeline/reply.ts';
import { assertReadable, BODY_METHODS, Context, readBody, readRequest, type Request } from './pipeline/request.ts';

export { DRAIN_MAX_BYTES } from './pipeline/request.ts';
export { MAX_JSON_DEPTH } from './pipeline/input.ts';

export interface HttpServer {
  port: number;
  /** Stops listening and closes every connection. */
  close(): void;
}

const NO_PARAMS: string[] = [];

interface Matcher {
  segments: string[];
  methods: string[];
}

/**
 * Serves every route on uWebSockets.js. One pipeline for all of them: request id, body cap, content type,
 * JSON parsing, authentication, rate limit headers, scope, zod validation, idempotency, error envelope.
 * Its sections are in pipeline/: request.ts (the request, its body and the cap), auth.ts, limits.ts
 * (rate limits and CSRF), input.ts (path parameters, the JSON body, validation), reply.ts.
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
        info.onAbort?.();
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

/** The pipeline's sections in order; each answers a value when it has one, and only promises are awaited. */
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
    assertReadable(info, tooLarge, maxBody);

    // Per-IP budgets count every attempt, credential or not; per-key budgets need the key first.
    const byIp = ipBudget(app, spec, info);
    if (byIp) limit = byIp instanceof Promise ? await byIp : byIp;
    const found = authenticate(app, guard, spec, info);
    const { apiKey, admin, session } = found instanceof Promise ? await found : found;
    const byKey = keyBudget(app, apiKey ?? admin?.api);
    if (byKey) limit = byKey instanceof Promise ? await byKey : byKey;
    assertScope(spec, apiKey);
    assertCsrf(app, admin, info);

    const params = decodeParams(paramNames, rawParams);
    assertOwnOrg(spec, admin, params);
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
    const status = sendReply(res, info, spec, reply, limit);
    const ms = performance.now() - started;
    meter.record(status, ms / 1000);
    if (logsRequests) info.logger(app.log).info({ method: info.method, path: info.path, status, ms: +ms.toFixed(2) }, 'request');
  });
}
