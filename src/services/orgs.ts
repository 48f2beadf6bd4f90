import { RECORDING_LIMITS } from '../core/recording.ts';
import { TtlCache } from '../platform/cache.ts';
import { iso, type Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import { afterCommit } from '../platform/db/tx.ts';
import type { Db } from '../platform/db/index.ts';
import { AppError } from '../core/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PlanName } from '../core/plans.ts';
import { attendanceRules, type AttendanceRules } from './attendance.ts';

export interface Org {
  id: string;
  name: string;
  plan: PlanName;
  allowedOrigins: string[];
  /** The rules in force: the organization's own, over the defaults. */
  attendanceRules: AttendanceRules;
  /** The organization's own apps: the join page offers one only when it is configured here. */
  mobileApps: MobileApps;
  /** Recordings older than this many days are deleted (docs/recordings.md). */
  recordingRetentionDays: number;
  /** Recordings get a transcript and notes (docs/ai-notes.md), when the plan has them and the server can. */
  aiNotes: boolean;
  /** The language its classes are taught in (ISO 639-1): what transcription listens for. */
  language: string;
  /** What its admins may type at sign-in instead of its id (SHORT_NAME_RULE); null until set. */
  shortName: string | null;
  createdAt: Date;
}

/** An Android app the organization publishes: its package and the SHA-256 fingerprints of its signing certificates. */
export interface AndroidApp {
  packageName: string;
  sha256CertFingerprints: string[];
}

/** An iOS app: its team (the App ID prefix) and bundle id. */
export interface IosApp {
  teamId: string;
  bundleId: string;
}

export interface MobileApps {
  android: AndroidApp | null;
  ios: IosApp | null;
}

type OrgRow = Omit<Org, 'attendanceRules' | 'mobileApps' | 'recordingRetentionDays'> & { attendanceRules: Partial<AttendanceRules> | null; androidApp: AndroidApp | null; iosApp: IosApp | null; recordingRetentionDays: number | null };
const ORG_COLUMNS = 'id, name, plan, allowed_origins, attendance_rules, android_app, ios_app, recording_retention_days, ai_notes, language, short_name, created_at';
const toOrg = ({ androidApp, iosApp, recordingRetentionDays, ...row }: OrgRow): Org => ({
  ...row,
  attendanceRules: attendanceRules(row.attendanceRules),
  mobileApps: { android: androidApp, ios: iosApp },
  recordingRetentionDays: recordingRetentionDays ?? RECORDING_LIMITS.retentionDays,
});

export async function createOrg(db: Db, clock: Clock, input: { name: string; plan: PlanName }): Promise<Org> {
  const now = iso(clock.now());
  const [org] = await db<OrgRow[]>`insert into organizations (id, name, plan, created_at, updated_at)
    values (${newId('org')}, ${input.name}, ${input.plan}, ${now}, ${now}) returning ${db.unsafe(ORG_COLUMNS)}`;
  return toOrg(org!);
}

export const SHORT_NAME_RULE = '3 to 40 lowercase letters, digits and hyphens, starting with a letter';
export const SHORT_NAME = /^[a-z][a-z0-9-]{2,39}$/;

/**
 * The organization id sign-in is given: an id as it is, or the id of the organization with that short
 * name. What matches nothing is returned as it is, so sign-in answers it as any unknown organization.
 */
export async function resolveOrgRef(db: Db, ref: string): Promise<string> {
  const v = ref.trim().toLowerCase();
  if (!SHORT_NAME.test(v)) return ref;
  const [org] = await db<{ id: string }[]>`select id from organizations where short_name = ${v}`;
  return org?.id ?? ref;
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

// ---- mobile apps: the apps the join page may hand a link to, and the well-known documents vouch for ----------

/**
 * The syntax of each part, as the platforms define it. An Android package is two or more segments of
 * letters, digits and underscores, each starting with a letter. A fingerprint is the SHA-256 of a
 * signing certificate as keytool and Play Console print it, and as assetlinks.json must carry it.
 * An Apple team id is 10 upper-case letters and digits; a bundle id is reverse-DNS of letters,
 * digits and hyphens.
 */
export const ANDROID_PACKAGE = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;
export const ANDROID_PACKAGE_RULE = 'must be an Android package name: two or more dot-separated segments of letters, digits and underscores, each starting with a letter, like org.school.classroom';
export const SHA256_FINGERPRINT = /^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/;
export const SHA256_FINGERPRINT_RULE = 'must be a SHA-256 certificate fingerprint: 32 upper-case hex pairs separated by colons, like 14:6D:E9:…:8A (keytool -list -v prints it)';
export const IOS_TEAM_ID = /^[A-Z0-9]{10}$/;
export const IOS_TEAM_ID_RULE = 'must be an Apple team id: 10 upper-case letters and digits, like A1B2C3D4E5';
export const IOS_BUNDLE_ID = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;
export const IOS_BUNDLE_ID_RULE = 'must be a bundle id: reverse-DNS segments of letters, digits and hyphens, like org.school.classroom';
/** An app is signed by one key, two while it rotates; a few more allow for upload and debug keys. */
export const MAX_FINGERPRINTS = 5;
export const MAX_APP_ID_LENGTH = 255;

/** Changes to the mobile apps: a platform given is replaced (null removes it); a platform left out stays. */
export interface MobileAppsPatch {
  android?: AndroidApp | null | undefined;
  ios?: IosApp | null | undefined;
}

/**
 * `attendanceRules` changes only the rules given; the others keep their values. `mobileApps` likewise
 * per platform.
 */
export async function updateOrg(
  db: Db,
  clock: Clock,
  id: string,
  patch: { name?: string | undefined; allowedOrigins?: string[] | undefined; attendanceRules?: Partial<AttendanceRules> | undefined; mobileApps?: MobileAppsPatch | undefined; recordingRetentionDays?: number | undefined; aiNotes?: boolean | undefined; language?: string | undefined; shortName?: string | null | undefined },
): Promise<Org> {
  if (patch.shortName) {
    const [taken] = await db<{ id: string }[]>`select id from organizations where short_name = ${patch.shortName} and id <> ${id}`;
    if (taken) throw new AppError('slug_taken', { message: 'Another organization has this short name.', details: { shortName: patch.shortName } });
  }
  const rules = patch.attendanceRules ? Object.fromEntries(Object.entries(patch.attendanceRules).filter(([, v]) => v !== undefined)) : null;
  const android = patch.mobileApps?.android;
  const ios = patch.mobileApps?.ios;
  const [org] = await db<OrgRow[]>`update organizations set
      name = coalesce(${patch.name ?? null}, name),
      allowed_origins = coalesce(${patch.allowedOrigins ? db.array(patch.allowedOrigins) : null}::text[], allowed_origins),
      attendance_rules = case when ${rules === null} then attendance_rules else coalesce(attendance_rules, '{}'::jsonb) || ${db.json((rules ?? {}) as never)} end,
      android_app = case when ${android === undefined} then android_app else ${android ? db.json(android as never) : null}::jsonb end,
      ios_app = case when ${ios === undefined} then ios_app else ${ios ? db.json(ios as never) : null}::jsonb end,
      recording_retention_days = coalesce(${patch.recordingRetentionDays ?? null}::int, recording_retention_days),
      ai_notes = coalesce(${patch.aiNotes ?? null}::boolean, ai_notes),
      language = coalesce(${patch.language ?? null}, language),
      short_name = case when ${patch.shortName === undefined} then short_name else ${patch.shortName ?? null} end,
      updated_at = ${iso(clock.now())}
    where id = ${id} returning ${db.unsafe(ORG_COLUMNS)}`.catch((err: { code?: string }) => {
      // two organizations taking the same short name at once: the unique index decides
      if (err.code === '23505') throw new AppError('slug_taken', { message: 'Another organization has this short name.', details: { shortName: patch.shortName } });
      throw err;
    });
  if (!org) throw new AppError('not_found', { message: `No organization ${id}.` });
  return toOrg(org);
}

interface SlugSettings {
  orgId: string;
  origins: string[];
  apps: MobileApps;
}

/** Every organization's configured apps, for the well-known documents that vouch for them. */
export interface LinkedApps {
  android: AndroidApp[];
  ios: IosApp[];
}

/** The well-known documents read at most this many organizations per platform, oldest first: a bounded read for a public route. */
export const MAX_LINKED_APPS = 2_000;
const NO_APPS: MobileApps = { android: null, ios: null };

/**
 * The settings the public pages read from a meeting's organization, by the meeting's slug: the
 * allowed origins (the embed page's `frame-ancestors`) and the mobile apps (the join page's app
 * offer); and every organization's apps for /.well-known. Cached 30 seconds, dropped on every node
 * when a setting changes (the bus).
 */
export class OrgOrigins {
  readonly #cache: TtlCache<SlugSettings>;
  readonly #clock: Clock;
  /** A change drops it, so a read that began before the change is not kept after it. */
  #linked: { at: number; apps: Promise<LinkedApps> } | null = null;

  constructor(
    clock: Clock,
    private readonly bus: Bus,
  ) {
    this.#clock = clock;
    this.#cache = new TtlCache(clock, 30_000, 10_000);
    bus.subscribe('orgs', (m) => {
      const orgId = m.orgId as string | undefined;
      if (orgId) this.#cache.deleteWhere((e) => e.orgId === orgId);
      this.#linked = null;
    });
  }

  async #forSlug(db: Db, slug: string): Promise<SlugSettings> {
    const hit = this.#cache.get(slug);
    if (hit) return hit;
    const [row] = await db<{ orgId: string; allowedOrigins: string[]; androidApp: AndroidApp | null; iosApp: IosApp | null }[]>`
      select o.id as org_id, o.allowed_origins, o.android_app, o.ios_app from meetings m join organizations o on o.id = m.org_id where m.slug = ${slug}`;
    if (!row) return { orgId: '', origins: [], apps: NO_APPS };
    const entry = { orgId: row.orgId, origins: row.allowedOrigins, apps: { android: row.androidApp, ios: row.iosApp } };
    this.#cache.set(slug, entry);
    return entry;
  }

  /** Origins allowed to frame the meeting with this slug ([] for none, or for an unknown slug). */
  async forSlug(db: Db, slug: string): Promise<string[]> {
    return (await this.#forSlug(db, slug)).origins;
  }

  /** The apps of the meeting's organization (none for an unknown slug). */
  async appsForSlug(db: Db, slug: string): Promise<MobileApps> {
    return (await this.#forSlug(db, slug)).apps;
  }

  /**
   * Every configured app, oldest organization first, each platform at most MAX_LINKED_APPS. OS
   * verifiers read the documents built from this rarely, but anyone may ask: one read per 30 seconds
   * per node, shared by the requests that arrive while it runs.
   */
  linkedApps(db: Db): Promise<LinkedApps> {
    const now = this.#clock.now();
    if (this.#linked && now - this.#linked.at <= 30_000) return this.#linked.apps;
    const apps = (async (): Promise<LinkedApps> => {
      const [android, ios] = await Promise.all([
        db<{ androidApp: AndroidApp }[]>`select android_app from organizations where android_app is not null order by created_at, id limit ${MAX_LINKED_APPS}`,
        db<{ iosApp: IosApp }[]>`select ios_app from organizations where ios_app is not null order by created_at, id limit ${MAX_LINKED_APPS}`,
      ]);
      return { android: android.map((r) => r.androidApp), ios: ios.map((r) => r.iosApp) };
    })();
    const entry = { at: now, apps };
    this.#linked = entry;
    // a failed read is not kept: the next request tries again
    apps.catch(() => {
      if (this.#linked === entry) this.#linked = null;
    });
    return apps;
  }

  /** After an update commits: every node forgets the organization's cached settings. */
  changed(db: Db, orgId: string): void {
    afterCommit(db, () => this.bus.publish('orgs', { orgId }));
  }
}
