import { z } from 'zod';
import { errorCatalog, type ErrorCode } from '../src/core/errors.ts';
import { fullPath, type Route } from './route.ts';

type Json = Record<string, unknown>;

const schema = (s: z.ZodType, io: 'input' | 'output'): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  return rest;
};

const errorEnvelope = {
  type: 'object',
  required: ['error', 'requestId'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'details'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
    },
    requestId: { type: 'string' },
  },
};

const COMMON: Record<string, readonly ErrorCode[]> = {
  none: ['validation_failed', 'invalid_json', 'unsupported_media_type', 'payload_too_large'],
  apiKey: ['auth_missing', 'auth_malformed', 'api_key_invalid', 'api_key_revoked', 'admin_session_invalid', 'admin_session_expired', 'admin_session_revoked', 'insufficient_scope', 'rate_limited', 'validation_failed', 'invalid_json', 'unsupported_media_type', 'payload_too_large'],
  session: ['auth_missing', 'auth_malformed', 'session_invalid'],
  admin: ['admin_session_missing', 'auth_malformed', 'admin_session_invalid', 'admin_session_expired', 'admin_session_revoked', 'csrf_failed', 'org_mismatch', 'rate_limited', 'validation_failed', 'invalid_json', 'unsupported_media_type', 'payload_too_large'],
};

/** Every route may answer these: a fault of ours (500), or the database or Redis unreachable for a moment (503, with Retry-After). */
const SERVER_ERRORS: readonly ErrorCode[] = ['internal_error', 'service_unavailable'];

/** Statuses whose responses say when to try again. */
const RETRY_AFTER = new Set([429, 503]);

const SECURITY: Record<Route['spec']['auth'], Json[]> = {
  none: [],
  apiKey: [{ apiKey: [] }, { adminSession: [] }],
  session: [{ meetingSession: [] }],
  admin: [{ adminSession: [] }, { adminCookie: [] }],
};

/**
 * The OpenAPI 3.1 document, generated from the same route table and zod schemas that serve the API.
 * `serverUrl` is the server's base URL (no path: the paths are whole, `/api/v1/...` and the pages).
 */
export function buildOpenApi(routes: Route[], serverUrl: string): Json {
  const paths: Record<string, Json> = {};
  for (const { spec } of routes) {
    const path = fullPath(spec).replace(/:(\w+)/g, '{$1}');
    const parameters: Json[] = [];
    for (const [where, obj] of [['path', spec.params], ['query', spec.query]] as const) {
      if (!obj) continue;
      const js = schema(obj, 'input') as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, s] of Object.entries(js.properties ?? {})) {
        parameters.push({ name, in: where, required: where === 'path' || (js.required ?? []).includes(name), schema: s, ...(s.description ? { description: s.description } : {}) });
      }
    }
    if ((spec.auth === 'apiKey' || spec.auth === 'admin') && spec.method === 'post') {
      parameters.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 }, description: 'Replays the first response for 24 hours.' });
    }
    const status = String(spec.status ?? 200);
    const data = spec.response ? schema(spec.response, 'output') : {};
    const success = spec.list
      ? { type: 'object', required: ['data', 'nextCursor'], properties: { data, nextCursor: { type: ['string', 'null'] } } }
      : { type: 'object', required: ['data'], properties: { data } };
    // a raw route answers its own media types: a page, a script, or (the document itself) JSON as it is
    const content = spec.raw
      ? Object.fromEntries(spec.raw.map((type) => [type, { schema: type === 'application/json' ? data : { type: 'string' } }]))
      : { 'application/json': { schema: success }, ...Object.fromEntries((spec.alternates ?? []).map((type) => [type, { schema: { type: 'string' } }])) };
    const codes = [...new Set([...(spec.errors ?? []), ...(COMMON[spec.auth] ?? []), ...SERVER_ERRORS])];
    const byStatus = new Map<number, ErrorCode[]>();
    for (const c of codes) byStatus.set(errorCatalog[c].status, [...(byStatus.get(errorCatalog[c].status) ?? []), c]);
    const responses: Json = { [status]: { description: 'Success', content } };
    for (const [s, cs] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      responses[String(s)] = {
        description: cs.map((c) => `\`${c}\``).join(', '),
        ...(RETRY_AFTER.has(s) ? { headers: { 'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } } } } : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const op: Json = {
      operationId: `${spec.method}${path.replace(/[{}]/g, '').replace(/[^a-zA-Z0-9]+(.)/g, (_, c: string) => c.toUpperCase())}`,
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      tags: [spec.tag],
      ...(parameters.length ? { parameters } : {}),
      ...(spec.body ? { requestBody: { required: true, content: { 'application/json': { schema: schema(spec.body, 'input') } } } } : {}),
      responses,
      security: SECURITY[spec.auth],
      ...(spec.scope ? { 'x-scopes': typeof spec.scope === 'string' ? [spec.scope] : spec.scope } : {}),
      ...(spec.ipLimit ? { 'x-rate-limit': `${spec.ipLimit.perMinute} per minute per IP address` } : {}),
    };
    (paths[path] ??= {})[spec.method] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Aula API', version: '1.0.0', description: 'Live classroom server: users, meetings and classes, join links, meeting sessions.' },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      schemas: { Error: errorEnvelope },
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key (aula_sk_...), server to server only.' },
        meetingSession: { type: 'http', scheme: 'bearer', description: 'Meeting session accessToken from the join-token exchange.' },
        adminSession: { type: 'http', scheme: 'bearer', description: 'A signed-in owner or admin: the sessionToken (aula_as_...) from POST /auth/sign-in.' },
        adminCookie: { type: 'apiKey', in: 'cookie', name: 'aula_session', description: 'The session cookie set by POST /auth/sign-in; non-GET requests also need the X-CSRF-Token header.' },
      },
    },
  };
}
