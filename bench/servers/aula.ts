/**
 * A real Aula node for the benchmarks, in its own process. The parent creates the database and passes
 * the node's configuration as AULA_* variables; this process starts the node, creates the fixtures
 * through the services (as test/helpers/node.ts does) and prints one line `BENCH_READY {json}`.
 *
 * Fixtures: one organization on the enterprise plan, BENCH_KEYS API keys with only `join-links:write`,
 * BENCH_USERS students, one scheduled meeting (ORG_MEMBERS access, no waiting room), and a pool of
 * BENCH_TOKENS single-use join tokens minted through JoinLinks.mint (the service call the mint route
 * makes), written to BENCH_DIR for the exchange scenario. Exits on SIGTERM after closing the node.
 *
 * Ablations, to see where a request's time goes without editing the server: a JSON line on stdin,
 * `{"ablate": ["rate-limit-local", ...]}`, swaps the named parts of the running node for cheaper
 * stand-ins (and restores every part not named); answered with `BENCH_ACK`. See bench/lib/ablations.ts.
 */
import { writeFileSync } from 'node:fs';
import { newId } from '../../src/platform/ids.ts';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { routes } from '../../http/routes/index.ts';
import { RateLimits, type RateLimitResult } from '../../src/platform/cluster/rate-limit.ts';
import { startNode } from '../../src/server/node.ts';
import { createOrg } from '../../src/services/orgs.ts';
import { ABLATIONS } from '../lib/ablations.ts';
import { RouteMeter } from '../../src/platform/metrics.ts';
import { closeOnSignals } from '../lib/node.ts';

const count = (name: string, fallback: number): number => {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(v) || v < 0) throw new Error(`${name} must be a non-negative integer`);
  return v;
};

const keys = count('BENCH_KEYS', 1024);
const users = count('BENCH_USERS', 100);
const tokens = count('BENCH_TOKENS', 0);
const dir = process.env.BENCH_DIR;
if (!dir) throw new Error('BENCH_DIR is required');

const node = await startNode();
const { app } = node;
const shutdown = closeOnSignals(node);

const mintRoute = routes.find((r) => r.spec.path === '/public/meetings/:id/join-links');
if (!mintRoute) throw new Error('mint route not found');
const passthrough = { safeParse: (v: unknown) => ({ success: true, data: v }) } as unknown as NonNullable<typeof mintRoute.spec.body>;
const original = { rateLimits: app.rateLimits, params: mintRoute.spec.params, body: mintRoute.spec.body };
const localLimits = new RateLimits(null, app.config.AULA_REDIS_PREFIX);
const noLimits = {
  consume: async (_bucket: string, _key: string, perMinute: number): Promise<RateLimitResult> => ({
    allowed: true,
    limit: perMinute,
    remaining: perMinute,
    resetAt: Math.ceil(Date.now() / 1000) + 60,
    retryAfterSeconds: 1,
  }),
} as unknown as RateLimits;
const log = app.log as unknown as Record<string, unknown>;
const join_ = app.tokens.join as unknown as Record<string, unknown>;
const record = RouteMeter.prototype.record;

/** The methods whose value-or-promise answers `plain-async` turns into promises, as async functions give. */
const valueOrPromise: [Record<string, unknown>, string][] = [
  [app.services.apiKeys as unknown as Record<string, unknown>, 'authenticate'],
  [app.services.admins as unknown as Record<string, unknown>, 'authenticate'],
  [RateLimits.prototype as unknown as Record<string, unknown>, 'consume'],
];
const valueOrPromiseOriginals = valueOrPromise.map(([o, name]) => o[name] as (...a: unknown[]) => unknown);

function plainAsync(on: boolean): void {
  valueOrPromise.forEach(([o, name], i) => {
    const f = valueOrPromiseOriginals[i]!;
    if (!on) {
      if (Object.hasOwn(Object.getPrototypeOf(o) as object, name)) delete o[name]; // an instance's own stand-in
      else o[name] = f; // the prototype's method itself
      return;
    }
    o[name] = function (this: unknown, ...args: unknown[]) {
      const r = f.apply(this, args);
      return r instanceof Promise ? r : Promise.resolve(r);
    };
  });
}

function ablate(names: string[]): void {
  const on = new Set(names);
  plainAsync(on.has('plain-async'));
  for (const n of on) if (!(n in ABLATIONS)) throw new Error(`unknown ablation ${n}`);
  app.rateLimits = on.has('no-rate-limit') ? noLimits : on.has('rate-limit-local') ? localLimits : original.rateLimits;
  if (on.has('no-log-child')) log.child = () => app.log;
  else delete log.child;
  if (on.has('no-zod')) {
    mintRoute!.spec.params = passthrough as unknown as typeof original.params;
    mintRoute!.spec.body = passthrough;
  } else {
    mintRoute!.spec.params = original.params;
    mintRoute!.spec.body = original.body;
  }
  if (on.has('no-seal')) join_.issue = () => 'jt_ablated';
  else if (on.has('sealed-once')) {
    delete join_.issue;
    const once = app.tokens.join.issue({ o: newId('org'), m: newId('mtg'), u: newId('usr'), r: 'PARTICIPANT', n: null, i: Date.now(), e: Date.now() + 300_000, s: true, d: null });
    join_.issue = () => once;
  } else delete join_.issue;
  RouteMeter.prototype.record = on.has('no-metrics') ? () => {} : record;
}

// The runner holds our stdin; when it goes away (even killed), so do we.
createInterface({ input: process.stdin }).on('close', () => void shutdown(0)).on('line', (line) => {
  try {
    const msg = JSON.parse(line) as { ablate?: string[] };
    ablate(msg.ablate ?? []);
    process.stdout.write('BENCH_ACK\n');
  } catch (err) {
    process.stderr.write(`aula bench server: bad command ${line}: ${(err as Error).message}\n`);
    process.stdout.write('BENCH_ACK\n');
  }
});

try {
  const { sql, clock, services } = app;
  const org = await createOrg(sql, clock, { name: 'Bench School', plan: 'enterprise' });
  const keyList: string[] = [];
  for (let i = 0; i < keys; i++) {
    const k = await services.apiKeys.create(sql, { orgId: org.id, name: `bench ${i}`, scopes: ['join-links:write'] });
    keyList.push(k.key);
  }
  const host = await services.users.upsert(sql, org.id, { externalId: 'bench-teacher', fullName: 'Bench Teacher', role: 'TEACHER' });
  const userIds: string[] = [];
  for (let i = 0; i < users; i++) {
    const { user } = await services.users.upsert(sql, org.id, { externalId: `bench-student-${i}`, fullName: `Student ${i}`, role: 'STUDENT' });
    userIds.push(user.id);
  }
  const meeting = await services.meetings.create(sql, org.id, {
    title: 'Bench meeting',
    type: 'MEETING',
    hostUserId: host.user.id,
    scheduledStart: new Date(clock.now() + 3_600_000).toISOString(),
    durationMinutes: 120,
  });

  const scopes = new Set(['join-links:write'] as const);
  const pool: string[] = new Array(tokens);
  for (let i = 0; i < tokens; i++) {
    const link = await services.joinLinks.mint(sql, org.id, scopes, meeting.id, { userId: userIds[i % userIds.length]!, expiresInSeconds: 3_600 }, app.baseUrl);
    pool[i] = link.token;
  }

  const keysFile = join(dir, 'keys.txt');
  const usersFile = join(dir, 'users.txt');
  const tokensFile = join(dir, 'tokens.txt');
  writeFileSync(keysFile, keyList.join('\n') + '\n');
  writeFileSync(usersFile, userIds.join('\n') + '\n');
  writeFileSync(tokensFile, pool.join('\n') + (pool.length ? '\n' : ''));
  process.stdout.write(
    'BENCH_READY ' +
      JSON.stringify({ port: node.port, orgId: org.id, meetingId: meeting.id, keys: keyList.length, users: userIds.length, tokens: pool.length, keysFile, usersFile, tokensFile }) +
      '\n',
  );
} catch (err) {
  process.stderr.write(`aula bench server: setup failed: ${(err as Error).stack ?? err}\n`);
  await shutdown(1);
}
