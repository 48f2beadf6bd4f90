import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { pgOptions } from '../../src/platform/db/index.ts';
import t from 'tap';
import { systemClock } from '../../src/core/clock.ts';
import { LocalBus } from '../../src/platform/cluster/bus.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import type { Sql } from '../../src/platform/db/index.ts';
import { ApiKeys } from '../../src/services/api-keys.ts';
import { createOrg } from '../../src/services/orgs.ts';
import { createTestDatabase, REDIS_URL, TEST_SECRET } from '../helpers/node.ts';
import { spawnNode } from '../helpers/process.ts';

const dbUrl = await createTestDatabase(t);
const sql = postgres(dbUrl, { max: 2, ...pgOptions }) as unknown as Sql;
t.teardown(() => sql.end());
await migrate(sql);
const org = await createOrg(sql, systemClock, { name: 'Two nodes', plan: 'free' });
const { key } = await new ApiKeys(sql, systemClock, new LocalBus()).create(sql, { orgId: org.id, name: 'k', scopes: ['users:read'] });

const env = { AULA_DATABASE_URL: dbUrl, AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: `aulatest:${randomBytes(4).toString('hex')}:`, AULA_SECRET_KEY: TEST_SECRET };
const [a, b] = await Promise.all([spawnNode(t, env), spawnNode(t, env)]);

t.test('one key\'s budget is shared by two server processes through Redis', async (t) => {
  t.not(a.proc.pid, b.proc.pid);
  const get = (url: string) => fetch(`${url}/api/v1/public/users`, { headers: { authorization: `Bearer ${key}` } });
  const statuses: number[] = [];
  const remaining: number[] = [];
  const limits = new Set<string | null>();
  for (let i = 0; i < 600; i += 20) {
    const batch = await Promise.all(Array.from({ length: 20 }, (_, j) => get((i + j) % 2 ? a.url : b.url)));
    for (const r of batch) {
      statuses.push(r.status);
      remaining.push(Number(r.headers.get('x-ratelimit-remaining')));
      limits.add(r.headers.get('x-ratelimit-limit'));
    }
  }
  t.ok(statuses.every((s) => s === 200), 'the free plan allows 600 a minute');
  t.same([...limits], ['600'], 'X-RateLimit-Limit on every response');
  t.equal(Math.min(...remaining), 0, 'the counter reached zero across both');
  for (const url of [a.url, b.url]) {
    const r = await get(url);
    t.equal(r.status, 429);
    const body = await r.json();
    t.equal(body.error.code, 'rate_limited');
    t.equal(body.error.details.limit, 600);
    t.equal(r.headers.get('retry-after'), String(body.error.details.retryAfterSeconds));
  }
});
