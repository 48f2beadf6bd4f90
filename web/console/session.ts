/**
 * The organizations signed in on this browser (localStorage), and which one the console shows.
 *
 * An owner's or admin's account belongs to one organization, and sign-in opens a session for it. The
 * console keeps each organization's session token so that an admin of several schools switches between
 * them without signing in again: the admin surface takes the token as a bearer (no CSRF header needed),
 * and the public API, which the console also calls (meetings, users, recordings, usage), takes an admin
 * only by that bearer, never by the cookie. The page's CSP allows scripts from this origin only, which
 * is what keeps the token from other scripts. Signing out revokes the session on the server and forgets
 * the token here; the organization stays in the list (without a token) so signing in again is one field.
 */

export interface SignedIn {
  orgId: string;
  /** The organization's name, once read. */
  orgName: string | null;
  email: string;
  role: string;
  adminId: string;
  /** `aula_as_…`; null once signed out (the organization is still remembered). */
  token: string | null;
  expiresAt: string | null;
}

const KEY = 'aula.console.orgs';
const CURRENT = 'aula.console.current';

function read(): SignedIn[] {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) ?? '[]') as unknown;
    return Array.isArray(v) ? (v as SignedIn[]).filter((o) => typeof o?.orgId === 'string') : [];
  } catch {
    return [];
  }
}

function write(list: SignedIn[]): void {
  localStorage.setItem(KEY, JSON.stringify(list));
}

/** Every organization remembered on this browser, the current one first. */
export function remembered(): SignedIn[] {
  const cur = localStorage.getItem(CURRENT);
  return read().sort((a, b) => Number(b.orgId === cur) - Number(a.orgId === cur));
}

/** The organization shown, with a session that has not expired; null when none. */
export function current(now = Date.now()): SignedIn | null {
  const id = localStorage.getItem(CURRENT);
  const s = read().find((o) => o.orgId === id);
  if (!s?.token || (s.expiresAt && Date.parse(s.expiresAt) <= now)) return null;
  return s;
}

export function remember(s: SignedIn): void {
  write([s, ...read().filter((o) => o.orgId !== s.orgId)]);
  localStorage.setItem(CURRENT, s.orgId);
}

export function update(orgId: string, change: Partial<SignedIn>): void {
  write(read().map((o) => (o.orgId === orgId ? { ...o, ...change } : o)));
}

export function switchTo(orgId: string): void {
  localStorage.setItem(CURRENT, orgId);
}

/** The session is over (signed out, expired or revoked): keep the organization, drop its token. */
export function forgetToken(orgId: string): void {
  update(orgId, { token: null, expiresAt: null });
}

/** Removes the organization from this browser's list altogether. */
export function forget(orgId: string): void {
  write(read().filter((o) => o.orgId !== orgId));
  if (localStorage.getItem(CURRENT) === orgId) localStorage.removeItem(CURRENT);
}
