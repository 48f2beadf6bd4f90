import type { z } from 'zod';
import type { Db } from '../src/platform/db/index.ts';
import type { ErrorCode } from '../src/core/errors.ts';
import type { Logger } from '../src/platform/logger.ts';
import type { Scope } from '../src/core/scopes.ts';
import type { ApiPrincipal } from '../src/services/api-keys.ts';
import type { AdminPrincipal } from '../src/services/admins.ts';
import type { SessionPrincipal } from '../src/services/sessions.ts';
import type { App } from '../src/services/app.ts';
import type { IdempotencyMode } from '../src/services/idempotency.ts';

export type Method = 'get' | 'post' | 'patch' | 'delete';

/** What a route declares about itself; the same object drives routing, checks and the OpenAPI document. */
export interface RouteSpec {
  method: Method;
  /** Under /api/v1 unless `root` is set; `:name` marks a path parameter. */
  path: string;
  root?: boolean;
  summary: string;
  description?: string;
  tag: string;
  /**
   * `apiKey`: the public API (an API key, or a signed-in admin's `Bearer aula_as_…` session).
   * `admin`: the admin surface (a signed-in owner or admin, by cookie or bearer session; a `:orgId`
   * path parameter must be the admin's organization). `session`: a meeting session's accessToken.
   */
  auth: 'none' | 'apiKey' | 'session' | 'admin';
  /** Any one of these scopes suffices. */
  scope?: Scope | readonly Scope[];
  /** Per-IP budget for routes without an API key. */
  ipLimit?: { name: string; perMinute: number };
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  response?: z.ZodType;
  /** Success status; 200 unless given. */
  status?: number;
  /** Listing routes put `nextCursor` beside `data`. */
  list?: boolean;
  errors?: readonly ErrorCode[];
  maxBodyBytes?: number;
  /** Answered as they are (not in the `{ data }` envelope), with these media types: pages, scripts, the OpenAPI document. */
  raw?: readonly string[];
  /** Other media types the JSON route also answers in, chosen by the request's Accept header (the handler's `raw` reply). */
  alternates?: readonly string[];
  /**
   * How an Idempotency-Key is honoured (IdempotencyMode): in the handler's transaction (default), with the
   * change of the command the handler asks an actor for (`actor`), or in steps claimed before work outside
   * the database (Idempotency.step).
   */
  idempotency?: IdempotencyMode;
  /**
   * `session` routes: a session revoked by its person's own account deletion is let through (`answer`:
   * DELETE /users/me answers a repeat the same) or refused like any revoked session (`refuse`, the
   * default); see Sessions.assertStanding.
   */
  erasedAccount?: 'answer' | 'refuse';
}

export interface RequestInfo {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  ip: string;
  requestId: string;
}

export interface Ctx<P, Q, B> {
  app: App;
  req: RequestInfo;
  params: P;
  query: Q;
  body: B;
  log: Logger;
  /** The transaction of an idempotent request, otherwise the pool. */
  db: Db;
  /** On `apiKey` routes: the key, or the signed-in admin as a public-API caller. */
  apiKey: ApiPrincipal | null;
  session: SessionPrincipal | null;
  /** On `admin` routes, and on `apiKey` routes called with an admin session. */
  admin: AdminPrincipal | null;
}

export interface Reply {
  status?: number;
  data: unknown;
  nextCursor?: string | null;
  headers?: Record<string, string>;
  /** Sent as is with this content type instead of the `{ data }` envelope. */
  raw?: { contentType: string; body: string | Uint8Array };
  /** Streamed instead of the envelope: `length` bytes of `stream` (a recording's file, or a range of it), with backpressure. */
  file?: { contentType: string; length: number; stream: NodeJS.ReadableStream };
  /** The `{ data }` envelope already serialized (exactly `JSON.stringify({ data })`), by a hot path that builds it cheaper. */
  json?: string;
}

type Infer<T> = T extends z.ZodType ? z.output<T> : undefined;

export interface Route<S extends RouteSpec = RouteSpec> {
  spec: S;
  handler: (ctx: Ctx<Infer<S['params']>, Infer<S['query']>, Infer<S['body']>>) => Promise<Reply> | Reply;
}

export function route<const S extends RouteSpec>(
  spec: S,
  handler: (ctx: Ctx<Infer<S['params']>, Infer<S['query']>, Infer<S['body']>>) => Promise<Reply> | Reply,
): Route {
  return { spec, handler } as unknown as Route;
}

export const fullPath = (spec: RouteSpec): string => (spec.root ? spec.path : `/api/v1${spec.path}`);
