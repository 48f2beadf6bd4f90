/**
 * A real Aula member (startMember: HTTP, media gateway, actor host, Redis cluster) for the cluster
 * benchmarks, driven by the runner over stdin (bench/lib/rpc.ts). Prints `BENCH_READY {json}`.
 *
 * Besides the real actor kinds it answers asks to `bench:<anything>` with a constant, from the same
 * cluster handler (an echo actor: routing without a transition or a commit), so the routing cost and
 * the cost of a real meeting transition can be told apart. Run with --expose-gc for `memory`.
 */
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { startMember } from '../../src/member.ts';
import { createOrg } from '../../src/services/orgs.ts';
import type { Scope } from '../../src/scopes.ts';
import { closeOnSignals } from '../lib/member.ts';

const member = await startMember();
const { app } = member;
const { cluster, host, sql, services, clock } = app;
const memberId = cluster.memberId;
cluster.setHandler((msg, shard, epoch) => (msg.actorId.startsWith('bench:') ? Promise.resolve({ ok: true, memberId }) : host.handle(msg, shard, epoch)));

const shutdown = closeOnSignals(member);

const gc = (globalThis as { gc?: () => void }).gc;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pool<T>(n: number, count: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, count) }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

const HOST_SCOPES = new Set<Scope>(['meetings:write']);

const commands: Record<string, (args: any) => Promise<unknown>> = {
  async info() {
    return { memberId, port: member.port, url: member.url, pid: process.pid, owned: [...cluster.owned().keys()] };
  },
  async memory() {
    for (let i = 0; i < 3; i++) {
      gc?.();
      await sleep(50);
    }
    const m = process.memoryUsage();
    return { ...m, actors: host.size, connections: member.gateway.connections, gc: !!gc };
  },
  async setup() {
    const org = await createOrg(sql, clock, { name: 'Bench Cluster School', plan: 'enterprise' });
    const teacher = await services.users.upsert(sql, org.id, { externalId: 'bench-teacher', fullName: 'Bench Teacher', role: 'TEACHER' });
    const student = await services.users.upsert(sql, org.id, { externalId: 'bench-student', fullName: 'Bench Student', role: 'STUDENT' });
    return { orgId: org.id, hostUserId: teacher.user.id, studentUserId: student.user.id };
  },
  /** Meetings through the service (each one's actor is created by the INIT the service sends). */
  async createMeetings({ orgId, hostUserId, count, concurrency = 16 }: { orgId: string; hostUserId: string; count: number; concurrency?: number }) {
    const t0 = performance.now();
    const ids = await pool(concurrency, count, async () => {
      const m = await services.meetings.create(sql, orgId, {
        title: 'Bench',
        type: 'MEETING',
        hostUserId,
        scheduledStart: new Date(clock.now() + 3_600_000).toISOString(),
        durationMinutes: 120,
      });
      return m.id;
    });
    return { ids, ms: performance.now() - t0 };
  },
  /** Passivates every actor (those still handling a message once they are done); how many. */
  async passivate() {
    let n = 0;
    for (let i = 0; i < 100 && host.size; i++) {
      n += host.passivateIdle(0);
      if (host.size) await sleep(50);
    }
    return n;
  },
  /** Waits until `expect` actors are loaded (a created meeting's INIT is still running when the create returns). */
  async settle({ expect, timeoutMs = 30_000 }: { expect: number; timeoutMs?: number }) {
    const until = performance.now() + timeoutMs;
    while (host.size < expect && performance.now() < until) await sleep(50);
    return host.size;
  },
  /** Loads (or reloads from their snapshots) meeting actors by asking each something. */
  async touch({ ids, concurrency = 32 }: { ids: string[]; concurrency?: number }) {
    const t0 = performance.now();
    await pool(concurrency, ids.length, (i) => cluster.ask(`meeting:${ids[i]}`, { type: 'INIT' }));
    return { ms: performance.now() - t0, loaded: host.size };
  },
  /** A synthetic host joins (as the media gateway would ask): the meeting goes LIVE. */
  async live({ meetingId, participantId, userId }: { meetingId: string; participantId: string; userId: string }) {
    return cluster.ask(`meeting:${meetingId}`, {
      type: 'JOIN',
      participantId,
      sessionId: `ses_${participantId}`,
      user: { id: userId, externalId: 'bench-teacher', name: 'Bench Teacher', email: null, role: 'TEACHER' },
      roomRole: 'HOST',
      device: 'web',
      connectionId: `conn-${participantId}`,
    });
  },
  /** Media tokens for `count` room connections, `perMeeting` to a meeting (the first of each a HOST). */
  async tokens({ orgId, hostUserId, studentUserId, count, perMeeting, file }: { orgId: string; hostUserId: string; studentUserId: string; count: number; perMeeting: number; file: string }) {
    const meetings = (await commands.createMeetings!({ orgId, hostUserId, count: Math.ceil(count / perMeeting) })) as { ids: string[] };
    const t0 = performance.now();
    const scopes = new Set<Scope>(['meetings:write', 'join-links:write']);
    const out = await pool(16, count, async (i) => {
      const meetingId = meetings.ids[Math.floor(i / perMeeting)]!;
      const hostLink = i % perMeeting === 0;
      const link = await services.joinLinks.mint(sql, orgId, hostLink ? HOST_SCOPES : scopes, meetingId, { userId: hostLink ? hostUserId : studentUserId, ...(hostLink ? { role: 'HOST' as const } : {}), expiresInSeconds: 3_600 }, app.baseUrl);
      const s = await services.sessions.exchange(sql, link.token, `bench-${i}`);
      return JSON.stringify({ mediaUrl: s.mediaUrl, mediaToken: s.mediaToken, meetingId });
    });
    writeFileSync(file, out.join('\n') + '\n');
    return { file, meetings: meetings.ids.length, ms: performance.now() - t0 };
  },
  /** `n` asks one after another; the latency of each in microseconds. */
  async askLoop({ actorId, event, n }: { actorId: string; event: Record<string, unknown>; n: number }) {
    const us: number[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await cluster.ask(actorId, event);
      us[i] = Math.round((performance.now() - t0) * 1000);
    }
    return us;
  },
  /** Asks until an answer comes (each attempt with its own deadline); the time since `since` (epoch ms). */
  async untilAnswer({ actorId, event, since, attemptTimeoutMs = 1000, deadlineMs = 30_000 }: { actorId: string; event: Record<string, unknown>; since: number; attemptTimeoutMs?: number; deadlineMs?: number }) {
    const errors: Record<string, number> = {};
    let attempts = 0;
    while (Date.now() - since < deadlineMs) {
      attempts++;
      try {
        const value = await cluster.ask(actorId, event, { timeoutMs: attemptTimeoutMs });
        return { ms: Date.now() - since, attempts, errors, value };
      } catch (err) {
        const code = (err as { code?: string }).code ?? 'error';
        errors[code] = (errors[code] ?? 0) + 1;
      }
    }
    throw new Error(`${actorId} did not answer within ${deadlineMs} ms: ${JSON.stringify(errors)}`);
  },
};

createInterface({ input: process.stdin })
  .on('close', () => void shutdown(0))
  .on('line', (line) => {
    let msg: { id: number; cmd: string; args?: unknown };
    try {
      msg = JSON.parse(line);
    } catch {
      return;
    }
    const fn = commands[msg.cmd];
    (fn ? fn(msg.args ?? {}) : Promise.reject(new Error(`unknown command ${msg.cmd}`))).then(
      (value) => process.stdout.write(`BENCH_REPLY ${JSON.stringify({ id: msg.id, ok: true, value })}\n`),
      (err: Error) => process.stdout.write(`BENCH_REPLY ${JSON.stringify({ id: msg.id, ok: false, error: err.stack ?? String(err) })}\n`),
    );
  });

process.stdout.write(`BENCH_READY ${JSON.stringify({ memberId, port: member.port, url: member.url, pid: process.pid })}\n`);
