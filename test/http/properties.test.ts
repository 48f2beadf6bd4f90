import fc from 'fast-check';
import t from 'tap';
import type { z } from 'zod';
import { fullPath } from '../../http/route.ts';
import { routes } from '../../http/routes/index.ts';
import { asQuery, shapedBy } from '../helpers/hostile.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';

// Property: for every route, params, query and body generated from its own zod schemas, with hostile
// values mixed into plausible ones, are answered with a status below 500 and, for 4xx, the error
// envelope; and a refused request writes no row (the tables requests write, compared before and after).
// The number of runs per route is AULA_PROPERTY_RUNS (default 25); a failure prints the seed to replay.

const RUNS = Number(process.env.AULA_PROPERTY_RUNS ?? 25);
const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node, 'enterprise');
const key = tenant.key;
const { app } = node;
// a key's last use is written by the node's 10-second flush, whatever a request was answered: stopped
// here (it flushes once as it stops), so that a refused request's snapshot of the tables stays still
await app.services.apiKeys.stop();
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key, ...(body !== undefined ? { body } : {}) });

// Real things for paths to name, so generated requests also reach the code behind the lookups.
const teacher = (await call('POST', '/public/users', { externalId: 'p-t', fullName: 'Prop Teacher', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 'p-s', fullName: 'Prop Student', role: 'STUDENT' })).body.data;
const klass = (await call('POST', '/public/classes', { externalId: 'p-c', name: 'Prop Class' })).body.data;
const meeting = (await call('POST', '/public/meetings', { title: 'Prop', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 30, settings: { waitingRoom: true } })).body.data;
// cancel and end are tried on a meeting of their own, so the one above stays open for the other routes
const doomed = (await call('POST', '/public/meetings', { title: 'Doomed', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 30 })).body.data;
const link = (await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId: student.id })).body.data;
const session = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'prop-device' } })).body.data;
const PASSWORD = 'property tests sign in here';
await app.services.admins.create(app.sql, { orgId: tenant.orgId, email: 'prop@example.org', role: 'owner', password: PASSWORD });
const admin = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: 'prop@example.org', password: PASSWORD } })).body.data;

const known: Record<string, string[]> = {
  id: [meeting.id, student.id, klass.id, 'p-s', 'p-c'],
  userId: [student.id, teacher.id],
  slug: [meeting.slug],
  queueId: [session.waitingRoom?.queueId ?? 'q'],
  orgId: [tenant.orgId],
  deliveryId: ['dlv_none'],
  file: ['room-0000000000000000.js'],
};

/** Tables only requests write; background work (deliveries, actors, timers, the sign-in throttle) is left out. */
const TABLES = ['organizations', 'api_keys', 'users', 'classes', 'enrollments', 'meetings', 'meeting_invitations', 'join_token_uses', 'meeting_sessions', 'admins', 'webhook_endpoints', 'jobs'];
async function snapshot(): Promise<string> {
  // a bulk import accepted earlier writes users as it runs: wait for it first
  for (let i = 0; i < 200; i++) {
    const [busy] = await app.sql<{ n: number }[]>`select count(*)::int as n from jobs where status in ('QUEUED', 'RUNNING')`;
    if (busy!.n === 0) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const parts = await Promise.all(TABLES.map(async (name) => (await app.sql.unsafe(`select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as h from ${name} t`))[0]!.h as string));
  return parts.join(',');
}

function encodeSegment(v: unknown): string {
  try {
    return encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v) ?? 'x') || 'x';
  } catch {
    return 'x'; // a lone surrogate cannot be put in a URL at all
  }
}

const SKIP = new Set(['/auth/sign-out']); // would end the session the admin routes are tried with

for (const r of routes) {
  const spec = r.spec;
  if (SKIP.has(spec.path)) continue;
  t.test(`${spec.method.toUpperCase()} ${spec.path}`, async (t) => {
    const names = [...fullPath(spec).matchAll(/:(\w+)/g)].map((m) => m[1]!);
    const paramShape = spec.params ? ((spec.params as unknown as { _zod: { def: { shape: Record<string, z.ZodType> } } })._zod.def.shape ?? {}) : {};
    const ends = /\/(cancel|end)$/.test(spec.path);
    const params = fc.tuple(...names.map((n) => fc.oneof(fc.constantFrom(...(ends && n === 'id' ? [doomed.id] : (known[n] ?? ['x']))), paramShape[n] ? shapedBy(paramShape[n]!) : fc.string())));
    const query = spec.query ? shapedBy(spec.query as z.ZodType) : fc.constant(undefined);
    const body = spec.body ? shapedBy(spec.body as z.ZodType) : fc.constant(undefined);
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(params, query, body, async (ps, q, b) => {
        let path = fullPath(spec);
        names.forEach((n, i) => (path = path.replace(`:${n}`, encodeSegment(ps[i]))));
        path = path.replace(/^\/api\/v1/, '') + asQuery(q);
        const auth =
          spec.auth === 'apiKey' ? { key } : spec.auth === 'admin' ? { bearer: admin.sessionToken } : spec.auth === 'session' ? { bearer: session.accessToken } : {};
        const before = await snapshot();
        const res = await api(node, spec.method.toUpperCase(), path, { ...auth, ...(b !== undefined ? { body: b } : {}) });
        if (res.status >= 500) throw new Error(`${spec.method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
        if (res.status >= 400) {
          refused++;
          if (spec.raw === undefined || res.headers.get('content-type')?.startsWith('application/json')) {
            if (typeof res.body?.error?.code !== 'string' || typeof res.body?.error?.message !== 'string') throw new Error(`${spec.method} ${path}: ${res.status} without the error envelope`);
          }
          const after = await snapshot();
          if (after !== before) throw new Error(`${spec.method} ${path} was refused (${res.status} ${res.body?.error?.code}) but changed a table`);
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    t.pass(`${RUNS} generated requests, ${refused} refused, none answered 5xx or wrote when refused`);
  });
}
