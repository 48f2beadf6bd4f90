import { TtlCache } from '../cache.ts';
import { iso, type Clock } from '../clock.ts';
import type { Bus } from '../cluster/bus.ts';
import { afterCommit } from '../db/tx.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { PlanName } from '../plans.ts';

export interface Org {
  id: string;
  name: string;
  plan: PlanName;
  allowedOrigins: string[];
  createdAt: Date;
}

export async function createOrg(db: Db, clock: Clock, input: { name: string; plan: PlanName }): Promise<Org> {
  const now = iso(clock.now());
  const [org] = await db<Org[]>`insert into organizations (id, name, plan, created_at, updated_at)
    values (${newId('org')}, ${input.name}, ${input.plan}, ${now}, ${now}) returning id, name, plan, allowed_origins, created_at`;
  return org!;
}

export async function getOrg(db: Db, id: string): Promise<Org> {
  const [org] = await db<Org[]>`select id, name, plan, allowed_origins, created_at from organizations where id = ${id}`;
  if (!org) throw new AppError('not_found', { message: `No organization ${id}.` });
  return org;
}

// ---- allowed origins: who may frame the room page (embedUrl) -------------------------------------------------

export const MAX_ALLOWED_ORIGINS = 50;
export const ORIGIN_RULE = 'must be an origin: scheme, host and optional port, like https://school.example (no path, no wildcard)';

/** `https://school.example:8443` from what a customer typed, or null when it is not an origin (a path, a query, a wildcard, userinfo, another scheme). */
export function parseOrigin(text: string): string | null {
  if (text.includes('*') || /\s/.test(text)) return null;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
  if (u.username || u.password || u.search || u.hash || u.pathname !== '/' || !u.hostname) return null;
  if (/[?#]/.test(text) || !/^https?:\/\/[^/]+\/?$/i.test(text)) return null;
  return u.origin;
}

export async function updateOrg(db: Db, clock: Clock, id: string, patch: { name?: string; allowedOrigins?: string[] }): Promise<Org> {
  const [org] = await db<Org[]>`update organizations set
      name = coalesce(${patch.name ?? null}, name),
      allowed_origins = coalesce(${patch.allowedOrigins ? db.array(patch.allowedOrigins) : null}::text[], allowed_origins),
      updated_at = ${iso(clock.now())}
    where id = ${id} returning id, name, plan, allowed_origins, created_at`;
  if (!org) throw new AppError('not_found', { message: `No organization ${id}.` });
  return org;
}

/**
 * The allowed origins of a meeting's organization, by the meeting's slug, for the embed page's
 * `frame-ancestors`: cached 30 seconds, dropped on every node when the setting changes (the bus).
 */
export class OrgOrigins {
  readonly #cache: TtlCache<{ orgId: string; origins: string[] }>;

  constructor(
    clock: Clock,
    private readonly bus: Bus,
  ) {
    this.#cache = new TtlCache(clock, 30_000, 10_000);
    bus.subscribe('orgs', (m) => {
      const orgId = m.orgId as string | undefined;
      if (orgId) this.#cache.deleteWhere((e) => e.orgId === orgId);
    });
  }

  /** Origins allowed to frame the meeting with this slug ([] for none, or for an unknown slug). */
  async forSlug(db: Db, slug: string): Promise<string[]> {
    const hit = this.#cache.get(slug);
    if (hit) return hit.origins;
    const [row] = await db<{ orgId: string; allowedOrigins: string[] }[]>`
      select o.id as org_id, o.allowed_origins from meetings m join organizations o on o.id = m.org_id where m.slug = ${slug}`;
    const entry = { orgId: row?.orgId ?? '', origins: row?.allowedOrigins ?? [] };
    if (row) this.#cache.set(slug, entry);
    return entry.origins;
  }

  /** After an update commits: every node forgets the organization's cached origins. */
  changed(db: Db, orgId: string): void {
    afterCommit(db, () => this.bus.publish('orgs', { orgId }));
  }
}
