// What the CLI's commands do to the database, as named operations with JSON arguments and results, so
// that each one runs the same way wherever the database is: in this process (AULA_DATABASE_URL, or an
// embedded database nobody holds), or inside the running `aula serve` that holds the embedded
// database, reached over its command channel (control.ts).
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { App } from '../../services/app.ts';
import { systemClock, type Clock } from '../../core/clock.ts';
import { LocalBus } from '../../platform/cluster/bus.ts';
import type { Placement } from '../../platform/cluster/cluster.ts';
import { readPlacement } from '../../platform/cluster/placement.ts';
import { connectRedis } from '../../platform/cluster/redis.ts';
import { loadConfig, type Config } from '../../platform/config.ts';
import { DatabaseInUseError, embeddedDatabaseOwner, openDatabase, type Sql } from '../../platform/db/index.ts';
import { migrate } from '../../platform/db/migrate.ts';
import { AppError } from '../../core/errors.ts';
import { createCliLogger } from '../../platform/logger.ts';
import { PLAN_NAMES, type PlanName } from '../../core/plans.ts';
import { SCOPES } from '../../core/scopes.ts';
import { ApiKeys, type ApiKeyRecord } from '../../services/api-keys.ts';
import { ADMIN_ROLES, Admins } from '../../services/admins.ts';
import { createOrg, getOrg, updateOrg } from '../../services/orgs.ts';
import { auditAdminDisabled, OPERATOR, recordAudit } from '../../services/audit-log.ts';
import { inTx } from '../../platform/db/tx.ts';
import { cliBus } from './bus.ts';
import { CommandFailure, OwnerGone, sendToServer } from './control.ts';

export { CommandFailure };

/** What an operation runs with: the database and, for a change running nodes cache, a way to tell them. */
export interface OpContext {
  sql: Sql;
  clock: Clock;
  /** Brings the schema up to date; returns the migrations it applied. */
  migrate(): Promise<number[]>;
  /** The API keys service; `publishing`: its revocations must reach running nodes' caches. */
  apiKeys(publishing: boolean): ApiKeys;
  admins(publishing: boolean): Admins;
  publish(channel: string, message: Record<string, unknown>): Promise<void>;
  redis(): Redis | null;
  redisPrefix: string;
  /** Inside a running node: its cluster's own view, which names the node itself when there is no Redis. */
  placement?: () => Promise<Placement>;
}

const id = z.string().min(1).max(200);
const schemas = {
  migrate: z.object({}),
  'org.create': z.object({ name: z.string().min(1), plan: z.enum(PLAN_NAMES as [PlanName, ...PlanName[]]) }),
  'org.update': z.object({ id, name: z.string().min(1).optional(), allowedOrigins: z.array(z.string()).optional(), aiNotes: z.boolean().optional() }),
  'keys.create': z.object({ orgId: id, name: z.string().min(1), scopes: z.array(z.enum(SCOPES)).min(1) }),
  'keys.list': z.object({ orgId: id.optional() }),
  'keys.revoke': z.object({ id }),
  'admins.add': z.object({ orgId: id, email: z.string().min(1), role: z.enum(ADMIN_ROLES), password: z.string().min(1) }),
  'admins.disable': z.object({ id }),
  'cluster.status': z.object({}),
};
export type OpName = keyof typeof schemas;
export type OpArgs<K extends OpName> = z.infer<(typeof schemas)[K]>;

/** A key as `aula keys list` shows it: the console's record, with its organization (never the key). */
export type KeyListing = ApiKeyRecord & { orgId: string };

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

/** The operations; every result is plain JSON (it may cross the command channel). */
const ops = {
  async migrate(ctx: OpContext) {
    return { applied: await ctx.migrate() };
  },
  async 'org.create'(ctx: OpContext, a: OpArgs<'org.create'>) {
    const org = await createOrg(ctx.sql, ctx.clock, a);
    return { id: org.id, name: org.name, plan: org.plan, createdAt: iso(org.createdAt)! };
  },
  async 'org.update'(ctx: OpContext, a: OpArgs<'org.update'>) {
    const org = await inTx(ctx.sql, async (tx) => {
      const changed = [...(a.name !== undefined ? ['name'] : []), ...(a.allowedOrigins ? ['allowedOrigins'] : []), ...(a.aiNotes !== undefined ? ['aiNotes'] : [])];
      const o = await updateOrg(tx, ctx.clock, a.id, {
        ...(a.name !== undefined ? { name: a.name } : {}),
        ...(a.allowedOrigins ? { allowedOrigins: a.allowedOrigins } : {}),
        ...(a.aiNotes !== undefined ? { aiNotes: a.aiNotes } : {}),
      });
      if (changed.length) await recordAudit(tx, ctx.clock.now(), { orgId: o.id, actor: OPERATOR, action: 'organization.updated', target: { type: 'organization', id: o.id }, details: { changed } });
      return o;
    });
    if (a.allowedOrigins) await ctx.publish('orgs', { orgId: org.id });
    return { id: org.id, name: org.name, plan: org.plan, allowedOrigins: org.allowedOrigins, aiNotes: org.aiNotes };
  },
  async 'keys.create'(ctx: OpContext, a: OpArgs<'keys.create'>) {
    const key = await ctx.apiKeys(false).create(ctx.sql, a, { actor: OPERATOR });
    return { id: key.id, orgId: key.orgId, name: key.name, scopes: key.scopes, key: key.key, createdAt: iso(key.createdAt)! };
  },
  async 'keys.list'(ctx: OpContext, a: OpArgs<'keys.list'>): Promise<{ data: KeyListing[] }> {
    if (a.orgId) await getOrg(ctx.sql, a.orgId);
    return { data: await ctx.apiKeys(false).listAll(ctx.sql, a.orgId) };
  },
  async 'keys.revoke'(ctx: OpContext, a: OpArgs<'keys.revoke'>) {
    // published on the nodes' bus (or, inside the server, its own): running nodes refuse the key at once
    const now = await ctx.apiKeys(true).revoke(ctx.sql, a.id, { actor: OPERATOR });
    const [row] = await ctx.sql<{ revokedAt: Date | null }[]>`select revoked_at from api_keys where id = ${a.id}`;
    if (!row) throw new CommandFailure(`no API key ${a.id}`);
    return { id: a.id, revoked: true, revokedAt: iso(row.revokedAt), alreadyRevoked: !now };
  },
  async 'admins.add'(ctx: OpContext, a: OpArgs<'admins.add'>) {
    const m = await inTx(ctx.sql, async (tx) => {
      const made = await ctx.admins(false).create(tx, a);
      await recordAudit(tx, ctx.clock.now(), { orgId: made.orgId, actor: OPERATOR, action: 'admin.added', target: { type: 'admin', id: made.id }, details: { email: made.email, role: made.role } });
      return made;
    });
    return { id: m.id, orgId: m.orgId, email: m.email, role: m.role, createdAt: m.createdAt };
  },
  async 'admins.disable'(ctx: OpContext, a: OpArgs<'admins.disable'>) {
    // the revoked sessions are published on the nodes' bus, so running nodes drop them at once
    const now = await ctx.admins(true).disable(ctx.sql, a.id);
    const [row] = await ctx.sql<{ disabledAt: Date | null; orgId: string; email: string }[]>`select disabled_at, org_id, email from admins where id = ${a.id}`;
    if (!row) throw new CommandFailure(`no admin ${a.id}`);
    // after the change, which tells running nodes to drop the sessions only once it has committed
    if (now) await auditAdminDisabled(ctx.sql, ctx.clock.now(), { orgId: row.orgId, actor: OPERATOR, adminId: a.id, email: row.email });
    return { id: a.id, disabled: true, disabledAt: iso(row.disabledAt), alreadyDisabled: !now };
  },
  async 'cluster.status'(ctx: OpContext): Promise<Placement> {
    return ctx.placement ? ctx.placement() : readPlacement(ctx.redis(), ctx.sql, ctx.redisPrefix);
  },
};
export type OpResult<K extends OpName> = Awaited<ReturnType<(typeof ops)[K]>>;

/** Runs one operation in `ctx`, turning what a user can get wrong into a CommandFailure. */
export async function executeOp(ctx: OpContext, op: string, args: unknown): Promise<unknown> {
  if (!Object.hasOwn(schemas, op)) throw new CommandFailure(`this server does not know the command ${op}; is it an older aula?`, 2);
  const parsed = schemas[op as OpName].safeParse(args);
  if (!parsed.success) throw new CommandFailure(`bad arguments for ${op}: ${parsed.error.issues[0]?.message}`, 2);
  try {
    return await (ops[op as OpName] as (ctx: OpContext, a: unknown) => Promise<unknown>)(ctx, parsed.data);
  } catch (err) {
    if (err instanceof AppError && (err.code === 'not_found' || err.code === 'admin_exists')) {
      // "No organization org_x." reads as the other messages do: "no organization org_x"
      throw new CommandFailure(err.message.replace(/^No /, 'no ').replace(/\.$/, ''));
    }
    if ((err as { code?: string }).code === '42P01') throw new CommandFailure('the database has no schema yet; run aula migrate');
    throw err;
  }
}

/** The context of an operation run inside a running node (the command channel): its connection, bus and services. */
export function nodeContext(app: App): OpContext {
  return {
    sql: app.sql,
    clock: app.clock,
    migrate: () => migrate(app.sql, app.log),
    apiKeys: () => app.services.apiKeys,
    admins: () => app.services.admins,
    publish: (channel, message) => app.bus.publish(channel, message),
    redis: () => app.redis,
    redisPrefix: app.config.AULA_REDIS_PREFIX,
    placement: () => app.cluster.placement(),
  };
}

/**
 * Runs an operation where the database is. With AULA_DATABASE_URL: here, connected as any client. With
 * the embedded database: here when no process holds it, otherwise inside the `aula serve` that does
 * (PGlite is one session, which that server's connection holds; see control.ts).
 */
export async function runOp<K extends OpName>(op: K, args: OpArgs<K>): Promise<OpResult<K>> {
  const config = loadConfig();
  for (let attempt = 0; ; attempt++) {
    const owner = config.AULA_DATABASE_URL ? null : embeddedDatabaseOwner(config.AULA_DATA_DIR);
    try {
      if (owner) return (await sendToServer(config.AULA_DATA_DIR, owner, op, args)) as OpResult<K>;
      return await runHere(config, op, args);
    } catch (err) {
      // the server stopped while we looked for it, or one took the database as we opened it: look again
      const again = err instanceof OwnerGone || (err instanceof DatabaseInUseError && !config.AULA_DATABASE_URL);
      if (!again || attempt >= 2) throw err;
    }
  }
}

async function runHere<K extends OpName>(config: Config, op: K, args: OpArgs<K>): Promise<OpResult<K>> {
  const log = createCliLogger(config);
  const db = await openDatabase(config, log);
  const bus = cliBus(config, log);
  let redis: Redis | null = null;
  try {
    // cluster status only reads (and says so when there is no schema yet); every other command migrates first
    const applied = op === 'cluster.status' ? [] : await migrate(db.sql, log);
    const ctx: OpContext = {
      sql: db.sql,
      clock: systemClock,
      migrate: async () => applied,
      apiKeys: (publishing) => new ApiKeys(db.sql, systemClock, publishing ? bus.get() : new LocalBus()),
      admins: (publishing) => new Admins(db.sql, systemClock, publishing ? bus.get() : new LocalBus()),
      publish: (channel, message) => bus.get().publish(channel, message),
      redis: () => (config.AULA_REDIS_URL ? (redis ??= connectRedis(config.AULA_REDIS_URL, log, 'aula-cli')) : null),
      redisPrefix: config.AULA_REDIS_PREFIX,
    };
    return (await executeOp(ctx, op, args)) as OpResult<K>;
  } finally {
    (redis as Redis | null)?.disconnect();
    await bus.close();
    await db.close();
  }
}
