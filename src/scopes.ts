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
] as const;

export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

export function hasScope(granted: ReadonlySet<Scope>, needed: Scope | readonly Scope[]): boolean {
  const any = typeof needed === 'string' ? [needed] : needed;
  return any.some((s) => {
    if (granted.has(s)) return true;
    if (s.endsWith(':read')) return granted.has(s.replace(/:read$/, ':write') as Scope);
    return false;
  });
}
