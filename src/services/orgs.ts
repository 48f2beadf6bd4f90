import { TtlCache } from '../cache.ts';
import { iso, type Clock } from '../clock.ts';
import type { Bus } from '../cluster/bus.ts';
import { afterCommit } from '../db/tx.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { PlanName } from '../plans.ts';
import { attendanceRules, type AttendanceRules } from './attendance.ts';

export interface Org {
  id: string;
  name: string;
  plan: PlanName;
  allowedOrigins: string[];
  /** The rules in force: the organization's own, over the defaults. */
  attendanceRules: AttendanceRules;
  createdAt: Date;
}

type OrgRow = Omit<Org, 'attendanceRules'> & { attendanceRules: Partial<AttendanceRules> | null };
const ORG_COLUMNS = 'id, name, plan, allowed_origins, attendance_rules, created_at';
const toOrg = (row: OrgRow): Org => ({ ...row, attendanceRules: attendanceRules(row.attendanceRules) });

export async function createOrg(db: Db, clock: Clock, input: { name: string; plan: PlanName }): Promise<Org> {
  const now = iso(clock.now());
  const [org] = await db<OrgRow[]>`insert into organizations (id, name, plan, created_at, updated_at)
    values (${newId('org')}, ${input.name}, ${input.plan}, ${now}, ${now}) returning ${db.unsafe(ORG_COLUMNS)}`;
  return toOrg(org!);
}

export async function getOrg(db: Db, id: string): Promise<Org> {
  const [org] = await db<OrgRow[]>`select ${db.unsafe(ORG_COLUMNS)} from organizations where id = ${id}`;
  if (!org) throw new AppError('not_found', { message: `No organization ${id}.` });
  return toOrg(org);
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

/** `attendanceRules` changes only the rules given; the others keep their values. */
export async function updateOrg(
  db: Db,
  clock: Clock,
  id: string,
  patch: { name?: string | undefined; allowedOrigins?: string[] | undefined; attendanceRules?: Partial<AttendanceRules> | undefined },
): Promise<Org> {
  const rules = patch.attendanceRules ? Object.fromEntries(Object.entries(patch.attendanceRules).filter(([, v]) => v !== undefined)) : null;
  const [org] = await db<OrgRow[]>`update organizations set
      name = coalesce(${patch.name ?? null}, name),
      allowed_origins = coalesce(${patch.allowedOrigins ? db.array(patch.allowedOrigins) : null}::text[], allowed_origins),
      attendance_rules = case when ${rules === null} then attendance_rules else coalesce(attendance_rules, '{}'::jsonb) || ${db.json((rules ?? {}) as never)} end,
      updated_at = ${iso(clock.now())}
    where id = ${id} returning ${db.unsafe(ORG_COLUMNS)}`;
  if (!org) throw new AppError('not_found', { message: `No organization ${id}.` });
  return toOrg(org);
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
