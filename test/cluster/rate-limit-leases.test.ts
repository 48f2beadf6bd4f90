import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { RateLimits, type RateLimitResult } from '../../src/platform/cluster/rate-limit.ts';
import { REDIS_URL } from '../helpers/node.ts';

// Two RateLimits on two connections are two nodes as far as the shared counter is concerned
// (test/cluster/rate-limit.test.ts runs the same budget through two real server processes).
const prefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const redisA = new Redis(REDIS_URL, { enableAutoPipelining: true });
const redisB = new Redis(REDIS_URL, { enableAutoPipelining: true });
const a = new RateLimits(redisA, prefix);
const b = new RateLimits(redisB, prefix);
// Until a connection is ready the limiter answers from its in-memory insurance window (by design:
// rejectIfRedisNotReady), which would count the first request apart from the shared counter.
await Promise.all([redisA.ping(), redisB.ping()]);

/** Counts the commands that reach Redis for keys under this file's prefix (MONITOR, on its own connection). */
const commands: string[][] = [];
const monitored = new Redis(REDIS_URL);
const monitor = await monitored.monitor();
monitor.on('monitor', (_time: string, args: string[]) => {
  // the scripts rate-limiter-flexible sends; MONITOR also shows the commands they run
  if (/^eval/i.test(args[0] ?? '') && args.some((x) => typeof x === 'string' && x.startsWith(`${prefix}rl:`))) commands.push(args);
});
t.teardown(async () => {
  a.close();
  b.close();
  monitor.disconnect();
  monitored.disconnect();
  const keys = await redisA.keys(`${prefix}*`);
  if (keys.length) await redisA.del(...keys);
  redisA.disconnect();
  redisB.disconnect();
});

const take = async (limits: RateLimits, key: string, perMinute: number): Promise<RateLimitResult> => limits.consume('key', key, perMinute);
const settle = () => new Promise((r) => setTimeout(r, 200)); // MONITOR lines arrive after the replies

t.test('one node alone: exact counts, and the key\'s own rate decides how many points it leases', async (t) => {
  commands.length = 0;
  const seen: number[] = [];
  let allowed = 0;
  for (let i = 0; i < 600; i++) {
    const r = await take(a, 'slow', 600);
    if (r.allowed) allowed++;
    seen.push(r.remaining);
    if (i % 50 === 0) await new Promise((r) => setTimeout(r, 30));
  }
  t.equal(allowed, 600, 'all 600 allowed');
  t.same(seen, Array.from({ length: 600 }, (_, i) => 599 - i), 'X-RateLimit-Remaining counts down by one');
  const refused = await take(a, 'slow', 600);
  t.equal(refused.allowed, false, 'the 601st is refused');
  t.equal(refused.remaining, 0);
  t.ok(refused.retryAfterSeconds >= 1 && refused.retryAfterSeconds <= 60);
  t.ok(Math.abs(refused.resetAt - (Date.now() / 1000 + refused.retryAfterSeconds)) <= 1.5, 'resetAt is when Retry-After ends');
  await settle();
  t.ok(commands.length < 600 / 2, `600 requests, ${commands.length} trips to Redis`);
  const again = a.consume('key', 'slow', 600);
  t.notOk(again instanceof Promise, 'a spent window is refused without asking Redis');
  t.equal((again as RateLimitResult).allowed, false);
});

t.test('a quiet key never leases ahead: each request is one exact trip', async (t) => {
  const clock = new ManualClock(Date.now());
  const quiet = new RateLimits(redisA, prefix, clock);
  t.teardown(() => quiet.close());
  commands.length = 0;
  // fewer than one request per lease horizon (a second) at this key's rate
  for (let i = 0; i < 4; i++) {
    const r = await take(quiet, 'quiet', 600);
    t.equal(r.remaining, 599 - i);
    clock.advance(2_000);
  }
  await settle();
  t.equal(commands.length, 4, 'one command each');
  t.equal(Number(await redisA.get(`${prefix}rl:key:quiet`)), 4, 'the shared counter holds exactly what was used');
});

t.test('concurrent requests wait for one grant together', async (t) => {
  commands.length = 0;
  const results = await Promise.all(Array.from({ length: 40 }, () => take(a, 'burst', 600)));
  t.ok(results.every((r) => r.allowed));
  t.same(results.map((r) => r.remaining).sort((x, y) => y - x), Array.from({ length: 40 }, (_, i) => 599 - i), 'each remaining once');
  await settle();
  t.ok(commands.length <= 2, `40 at once: ${commands.length} trips`);
  t.equal(Number(await redisA.get(`${prefix}rl:key:burst`)), 40);
});

t.test('a busy key is answered mostly without a promise', async (t) => {
  let sync = 0;
  let n = 0;
  // a fifth of the budget: leases are speculative while more than a quarter is left
  while (n < 2_000) {
    const r = a.consume('key', 'busy', 10_000);
    if (!(r instanceof Promise)) sync++;
    else await r;
    n++;
    if (n % 100 === 0) await new Promise((r) => setImmediate(r));
  }
  t.ok(sync / n > 0.9, `${sync} of ${n} answered from the lease`);
});

t.test('two nodes hammering one key admit exactly the budget between them', async (t) => {
  const perMinute = 10_000;
  let admitted = 0;
  const counts = { a: 0, b: 0 };
  const run = async (limits: RateLimits, name: 'a' | 'b') => {
    let refusedInARow = 0;
    while (refusedInARow < 3) {
      const batch = await Promise.all(Array.from({ length: 8 }, () => take(limits, 'shared', perMinute)));
      const ok = batch.filter((r) => r.allowed).length;
      admitted += ok;
      counts[name] += ok;
      refusedInARow = ok === 0 ? refusedInARow + 1 : 0;
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all([run(a, 'a'), run(b, 'b')]);
  t.equal(admitted, perMinute, `exactly the budget (a ${counts.a}, b ${counts.b})`);
  t.ok(counts.a > 1_000 && counts.b > 1_000, 'both nodes took part');
  for (const limits of [a, b]) {
    const r = await take(limits, 'shared', perMinute);
    t.equal(r.allowed, false);
    t.equal(r.remaining, 0);
  }
});

t.test('a first limiter created while commands wait in the auto-pipeline still counts in Redis', async (t) => {
  // rate-limiter-flexible defines its script on the connection when a limiter is made; a pipeline
  // already gathering that tick's commands did not have it, threw, and crashed the process at exec
  // (a CI run's node died so). The limiters' script is defined when RateLimits is made.
  const redis = new Redis(REDIS_URL, { enableAutoPipelining: true });
  await redis.ping();
  const fresh = new RateLimits(redis, `${prefix}fresh:`);
  t.teardown(() => {
    fresh.close();
    redis.disconnect();
  });
  const before = redis.get(`${prefix}fresh:nothing`); // opens this tick's auto-pipeline
  const result = await fresh.consume('pipeline', 'k', 100);
  t.equal(await before, null);
  t.match(result, { allowed: true, limit: 100 });
  const counted = await redis.keys(`${prefix}fresh:rl:pipeline*`);
  t.equal(counted.length, 1, 'the point was counted in Redis, not by the in-memory insurance');
});

t.test('without Redis: the same leases in process', async (t) => {
  const local = new RateLimits(null, prefix);
  t.teardown(() => local.close());
  const results: RateLimitResult[] = [];
  for (let i = 0; i < 130; i++) results.push(await take(local, 'k', 120));
  t.equal(results.filter((r) => r.allowed).length, 120);
  t.same(results.slice(0, 120).map((r) => r.remaining), Array.from({ length: 120 }, (_, i) => 119 - i));
  t.ok(results.slice(120).every((r) => !r.allowed && r.remaining === 0));
});
