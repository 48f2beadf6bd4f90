import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../config.ts';
import { DatabaseInUseError, openDatabase } from '../db/index.ts';
import { createCliLogger } from '../logger.ts';
import { PLAN_NAMES, type PlanName } from '../plans.ts';
import { isScope, SCOPES, type Scope } from '../scopes.ts';
import { allowedOrigins, createOrg, updateOrg } from '../services/orgs.ts';
import { ApiKeys } from '../services/api-keys.ts';
import { LocalBus } from '../cluster/bus.ts';
import { withDb } from './db.ts';
import { systemClock } from '../clock.ts';
import { EX_UNAVAILABLE, ServiceUnavailableError, waitForServices } from './preflight.ts';
import { serveMember, serveWorkers } from './serve.ts';
import { formatPlacement, readPlacement } from '../cluster/placement.ts';
import { connectRedis } from '../cluster/redis.ts';
import { membersCommand, MEMBERS_USAGE } from './members.ts';

const USAGE = `usage: aula <command> [options]

commands:
  serve [--workers N] [--fail-fast]         start a server member (embedded database unless AULA_DATABASE_URL is set);
                                            --workers N: N member processes on one port, restarted if they die
                                            (needs AULA_DATABASE_URL and AULA_REDIS_URL); until PostgreSQL and
                                            Redis answer it says so and retries with backoff, or with
                                            --fail-fast exits 69
  migrate                                   apply database migrations
  org create --name N --plan P [--json]     create an organization; plans: ${PLAN_NAMES.join(', ')}
  org update --id ORG [--name N] [--allowed-origins https://a.example,https://b.example] [--json]
                                            rename it, or set the origins allowed to frame the room
                                            ('' clears the list); prints the organization
  keys create --org ID --name N --scopes s1,s2 [--json]
                                            create an API key (printed once); scopes: ${SCOPES.join(', ')}
  keys revoke --id KEY_ID [--json]          revoke an API key
${MEMBERS_USAGE}
  cluster status [--json]                   members, and each shard's owner and fencing epoch (read-only)
`;

class UsageError extends Error {}

function out(json: boolean, obj: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? JSON.stringify(obj) + '\n' : text + '\n');
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, sub, ...rest] = argv;
  const opts = (args: string[]) =>
    parseArgs({
      args,
      options: { name: { type: 'string' }, plan: { type: 'string' }, org: { type: 'string' }, scopes: { type: 'string' }, id: { type: 'string' }, 'allowed-origins': { type: 'string' }, json: { type: 'boolean', default: false } },
      strict: true,
    }).values;
  try {
    if (cmd === 'serve') {
      const { workers, 'fail-fast': failFast } = parseArgs({
        args: argv.slice(1),
        options: { workers: { type: 'string', default: '1' }, 'fail-fast': { type: 'boolean', default: false } },
        strict: true,
      }).values;
      const n = Number(workers);
      if (!/^\d+$/.test(workers!) || n < 1 || n > 256) throw new UsageError('--workers must be a whole number from 1 to 256');
      // a worker started by a primary skips this: the primary waited already
      if (!process.env.AULA_WORKER) await waitForServices(loadConfig(), { failFast: !!failFast });
      if (n > 1) return await serveWorkers(n);
      await serveMember();
      return -1;
    }
    if (cmd === 'migrate') {
      const applied = await withDb(async (_sql, applied) => applied);
      out(false, {}, applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date');
      return 0;
    }
    if (cmd === 'org' && sub === 'create') {
      const o = opts(rest);
      if (!o.name) throw new UsageError('--name is required');
      if (!o.plan || !(PLAN_NAMES as string[]).includes(o.plan)) throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(', ')}`);
      const org = await withDb((sql) => createOrg(sql, systemClock, { name: o.name!, plan: o.plan as PlanName }));
      out(o.json!, { id: org.id, name: org.name, plan: org.plan }, org.id);
      return 0;
    }
    if (cmd === 'org' && sub === 'update') {
      const o = opts(rest);
      if (!o.id) throw new UsageError('--id is required');
      if (o.name === undefined && o['allowed-origins'] === undefined) throw new UsageError('give --name or --allowed-origins');
      let origins: string[] | undefined;
      if (o['allowed-origins'] !== undefined) {
        const list = o['allowed-origins'].split(',').map((x) => x.trim()).filter(Boolean);
        const parsed = allowedOrigins.safeParse(list);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          const at = typeof issue.path[0] === 'number' ? ` (${list[issue.path[0]]})` : '';
          throw new UsageError(`--allowed-origins: ${issue.message}${at}`);
        }
        origins = parsed.data;
      }
      const org = await withDb(async (sql, _applied, bus) => {
        const updated = await updateOrg(sql, systemClock, o.id!, { ...(o.name !== undefined ? { name: o.name } : {}), ...(origins ? { allowedOrigins: origins } : {}) });
        if (origins) await bus().publish('orgs', { orgId: updated.id });
        return updated;
      });
      out(o.json!, { id: org.id, name: org.name, plan: org.plan, allowedOrigins: org.allowedOrigins }, `${org.id} ${org.name}: allowed origins ${org.allowedOrigins.join(', ') || '(none)'}`);
      return 0;
    }
    if (cmd === 'keys' && sub === 'create') {
      const o = opts(rest);
      if (!o.org || !o.name || !o.scopes) throw new UsageError('--org, --name and --scopes are required');
      const scopes = o.scopes.split(',').map((s) => s.trim()).filter(Boolean);
      const bad = scopes.filter((s) => !isScope(s));
      if (bad.length || !scopes.length) throw new UsageError(`unknown scopes: ${bad.join(', ') || '(none given)'}; known: ${SCOPES.join(', ')}`);
      const key = await withDb((sql) => new ApiKeys(sql, systemClock, new LocalBus()).create(sql, { orgId: o.org!, name: o.name!, scopes: scopes as Scope[] }));
      out(o.json!, { id: key.id, orgId: key.orgId, name: key.name, scopes: key.scopes, key: key.key }, key.key);
      return 0;
    }
    if (cmd === 'keys' && sub === 'revoke') {
      const o = opts(rest);
      if (!o.id) throw new UsageError('--id is required');
      // published on the members' bus: a running member refuses the key at once, not when its cache expires
      const revoked = await withDb((sql, _applied, bus) => new ApiKeys(sql, systemClock, bus()).revoke(sql, o.id!));
      out(o.json!, { id: o.id, revoked }, revoked ? `revoked ${o.id}` : `${o.id} was not active`);
      return 0;
    }
    if (cmd === 'members') return await membersCommand(sub, rest);
    if (cmd === 'cluster' && sub === 'status') {
      const o = opts(rest);
      const config = loadConfig();
      const log = createCliLogger(config);
      const db = await openDatabase(config, log);
      const redis = config.AULA_REDIS_URL ? connectRedis(config.AULA_REDIS_URL, log, 'aula-cli') : null;
      try {
        const p = await readPlacement(redis, db.sql, config.AULA_REDIS_PREFIX);
        out(o.json!, { ...p }, formatPlacement(p));
        return 0;
      } catch (err) {
        if ((err as { code?: string }).code !== '42P01') throw err;
        process.stderr.write('aula: the database has no shards table yet; run aula migrate\n');
        return 1;
      } finally {
        redis?.disconnect();
        await db.close();
      }
    }
    throw new UsageError(cmd ? `unknown command: ${[cmd, sub].filter(Boolean).join(' ')}` : 'no command given');
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`aula: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof ServiceUnavailableError) return EX_UNAVAILABLE; // the line saying why is written
    if (err instanceof ConfigError || err instanceof DatabaseInUseError) {
      process.stderr.write(`aula: ${err.message}\n`);
      return err instanceof ConfigError ? 78 : 75;
    }
    if ((err as { code?: string }).code === 'not_found' || (err as { code?: string }).code === '23503') {
      process.stderr.write(`aula: ${(err as Error).message}\n`);
      return 1;
    }
    throw err;
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
