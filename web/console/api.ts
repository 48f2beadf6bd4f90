import { current, forgetToken } from './session.ts';

/**
 * The console's one way to the server: the admin surface (`/api/v1/orgs/:orgId/...`) and the public API
 * a signed-in admin may use (`/api/v1/public/...`), both with the session as a bearer. Every failure is
 * an ApiError carrying the API's own envelope (`{ error: { code, message, details }, requestId }`), so
 * pages show the server's message rather than one of their own.
 */

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly requestId: string | null = null,
  ) {
    super(message);
  }

  /** validation_failed names the fields it refused. */
  get fields(): FieldError[] {
    const f = this.details.fields;
    return Array.isArray(f) ? (f as FieldError[]).filter((x) => typeof x?.field === 'string') : [];
  }
}

/** A session the server no longer takes: the console goes back to sign-in. */
const SESSION_OVER = new Set(['admin_session_missing', 'admin_session_expired', 'admin_session_invalid', 'admin_session_revoked', 'admin_disabled']);

let onSignedOut: (reason: string) => void = () => {};
/** The application's answer to a session that stopped working (expired, revoked, the admin disabled). */
export function whenSignedOut(fn: (reason: string) => void): void {
  onSignedOut = fn;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

type Query = Record<string, string | number | undefined | null>;

function url(path: string, query?: Query): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return `/api/v1${path}${s ? `?${s}` : ''}`;
}

async function send(method: string, path: string, opts: { query?: Query; body?: unknown; accept?: string; auth?: boolean } = {}): Promise<Response> {
  const headers: Record<string, string> = { accept: opts.accept ?? 'application/json' };
  const s = opts.auth === false ? null : current();
  if (s?.token) headers.authorization = `Bearer ${s.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url(path, opts.query), {
      method,
      headers,
      credentials: 'same-origin',
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check the connection and try again.');
  }
  if (res.ok) return res;
  let envelope: { error?: { code?: string; message?: string; details?: Record<string, unknown> }; requestId?: string } = {};
  try {
    envelope = (await res.json()) as typeof envelope;
  } catch {
    // not the API's envelope (a proxy's page): said below by status
  }
  const err = new ApiError(res.status, envelope.error?.code ?? 'http_error', envelope.error?.message ?? `The server answered ${res.status}.`, envelope.error?.details ?? {}, envelope.requestId ?? null);
  if (s && opts.auth !== false && SESSION_OVER.has(err.code)) {
    forgetToken(s.orgId);
    onSignedOut(err.message);
  }
  throw err;
}

export async function get<T>(path: string, query?: Query): Promise<T> {
  return ((await (await send('GET', path, { ...(query ? { query } : {}) })).json()) as { data: T }).data;
}

export async function list<T>(path: string, query?: Query): Promise<Page<T>> {
  const body = (await (await send('GET', path, { ...(query ? { query } : {}) })).json()) as { data: T[]; nextCursor?: string | null };
  return { data: body.data, nextCursor: body.nextCursor ?? null };
}

export async function post<T>(path: string, body?: unknown): Promise<T> {
  return ((await (await send('POST', path, { body: body ?? {} })).json()) as { data: T }).data;
}

export async function patch<T>(path: string, body: unknown): Promise<T> {
  return ((await (await send('PATCH', path, { body })).json()) as { data: T }).data;
}

export async function del<T>(path: string): Promise<T> {
  return ((await (await send('DELETE', path)).json()) as { data: T }).data;
}

/** A route's answer in another media type (attendance as CSV), as a file the browser downloads. */
export async function download(path: string, accept: string, filename: string): Promise<void> {
  const blob = await (await send('GET', path, { accept })).blob();
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

export interface SignInAnswer {
  admin: { id: string; email: string; role: string; orgId: string };
  sessionToken: string;
  csrfToken: string;
  expiresAt: string;
}

export async function signIn(orgId: string, email: string, password: string): Promise<SignInAnswer> {
  return ((await (await send('POST', '/auth/sign-in', { body: { orgId, email, password }, auth: false })).json()) as { data: SignInAnswer }).data;
}

/** What an invitation link is for (the accept page), without a session. */
export async function peekInvitation(token: string): Promise<{ email: string; role: string; orgId: string; orgName: string; expiresAt: string }> {
  return ((await (await send('POST', '/auth/invitation', { body: { token }, auth: false })).json()) as { data: { email: string; role: string; orgId: string; orgName: string; expiresAt: string } }).data;
}

/** Accepts an invitation: sets the password and answers a session, as sign-in does. */
export async function acceptInvitation(token: string, password: string): Promise<SignInAnswer> {
  return ((await (await send('POST', '/auth/accept-invitation', { body: { token, password }, auth: false })).json()) as { data: SignInAnswer }).data;
}

/** The organization's own routes, `/orgs/:orgId…`. */
export const org = (rest = ''): string => `/orgs/${encodeURIComponent(current()?.orgId ?? '')}${rest}`;
export const enc = encodeURIComponent;
