/**
 * API key scopes. A `:write` scope implies its `:read`. `join-links:write` lets a key mint join links
 * without being able to change meetings; only `meetings:write` may make a student a host or cohost.
 */
export const SCOPES = [
  'users:read',
  'users:write',
  'meetings:read',
  'meetings:write',
  'join-links:write',
  'classes:read',
  'classes:write',
  'webhooks:read',
  'webhooks:write',
  'recordings:read',
  'recordings:write',
] as const;

export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

/** The `:write` scope that implies each `:read` one. */
const WRITE_OF = new Map<Scope, Scope>(SCOPES.filter((s) => s.endsWith(':read')).map((s) => [s, s.replace(/:read$/, ':write') as Scope]));

const grants = (granted: ReadonlySet<Scope>, s: Scope): boolean => granted.has(s) || (WRITE_OF.has(s) && granted.has(WRITE_OF.get(s)!));

/** Whether the granted scopes include the needed one, or any one of several. */
export function hasScope(granted: ReadonlySet<Scope>, needed: Scope | readonly Scope[]): boolean {
  if (typeof needed === 'string') return grants(granted, needed);
  for (const s of needed) if (grants(granted, s)) return true;
  return false;
}
