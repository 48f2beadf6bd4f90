/**
 * A real Aula node (startNode: HTTP, media gateway, actor runtime, Redis cluster) for the cluster
 * benchmarks, driven by the runner over stdin (bench/lib/rpc.ts). Prints `BENCH_READY {json}`.
 *
 * Besides the real actors it answers asks to `bench:<anything>` with a constant, from the same
 * cluster handler (an echo actor: routing without a transition or a commit), so the routing cost and
 * the cost of a real meeting transition can be told apart. Run with --expose-gc for `memory`.
 * The join storm (bench/storm.ts) uses two of these nodes and their `stormSetup` and `stormMeetings`
 * fixtures.
 */
import { writeFileSync } from 'node:fs';
import { startNode } from '../../src/server/node.ts';
import { createOrg } from '../../src/services/orgs.ts';
import type { Scope } from '../../src/core/scopes.ts';
import { closeOnSignals } from '../lib/node.ts';
import { pool } from '../lib/pool.ts';
import { serveRpc } from '../lib/rpc-serve.ts';

const node = await startNode({
  wrapHandler: (handler) => (msg, shard, epoch) => (msg.actorId.startsWith('bench:') ? Promise.resolve({ ok: true, nodeId }) : handler(msg, shard, epoch)),
});
const { app } = node;
const { cluster, actors, sql, services, clock } = app;
const nodeId = cluster.nodeId;

const shutdown = closeOnSignals(node);

const gc = (globalThis as { gc?: () => void }).gc;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const HOST_SCOPES = new Set<Scope>(['meetings:write']);

const commands: Record<string, (args: any) => Promise<unknown>> = {
  async info() {
    return { nodeId, port: node.port, url: node.url, pid: process.pid, owned: [...cluster.owned().keys()] };
  },
  async memory() {
    for (let i = 0; i < 3; i++) {
      gc?.();
      await sleep(50);
    }
    const m = process.memoryUsage();
    return { ...m, actors: actors.size, connections: node.gateway.connections, gc: !!gc };
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
    for (let i = 0; i < 100 && actors.size; i++) {
      n += actors.passivateIdle(0);
      if (actors.size) await sleep(50);
    }
    return n;
  },
  /** Waits until `expect` actors are loaded (a created meeting's INIT is still running when the create returns). */
  async settle({ expect, timeoutMs = 30_000 }: { expect: number; timeoutMs?: number }) {
    const until = performance.now() + timeoutMs;
    while (actors.size < expect && performance.now() < until) await sleep(50);
    return actors.size;
  },
  /** Loads (or reloads from their snapshots) meeting actors by asking each something. */
  async touch({ ids, concurrency = 32 }: { ids: string[]; concurrency?: number }) {
    const t0 = performance.now();
    await pool(concurrency, ids.length, (i) => cluster.ask(`meeting:${ids[i]}`, { type: 'INIT' }));
    return { ms: performance.now() - t0, loaded: actors.size };
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
  /**
   * The join storm's fixtures (bench/storm.ts), through the services: an organization on `enterprise`,
   * `keys` API keys (meetings:write and join-links:write), a teacher per room, `students` students, one
   * class per room with its students enrolled (student i in class i % rooms), and a student for the
   * flooding socket.
   */
  async stormSetup({ students, rooms, keys }: { students: number; rooms: number; keys: number }) {
    const t0 = performance.now();
    const org = await createOrg(sql, clock, { name: 'Bench Storm School', plan: 'enterprise' });
    const apiKeys = await pool(4, keys, (i) => services.apiKeys.create(sql, { orgId: org.id, name: `storm-${i}`, scopes: ['meetings:write', 'join-links:write'] }));
    const teacherIds = await pool(8, rooms, async (r) => (await services.users.upsert(sql, org.id, { externalId: `storm-teacher-${r}`, fullName: `Teacher ${r}`, role: 'TEACHER' })).user.id);
    const classIds = await pool(8, rooms, async (r) => (await services.classes.upsert(sql, org.id, { externalId: `storm-class-${r}`, name: `Class ${r}` })).cls.id);
    const studentIds = await pool(16, students, async (i) => (await services.users.upsert(sql, org.id, { externalId: `storm-student-${i}`, fullName: `Student ${i}`, role: 'STUDENT' })).user.id);
    await pool(16, students, (i) => services.enrollments.enroll(sql, org.id, classIds[i % rooms]!, { userId: studentIds[i]! }));
    const flooder = await services.users.upsert(sql, org.id, { externalId: 'storm-flooder', fullName: 'Flooding Student', role: 'STUDENT' });
    return { orgId: org.id, keys: apiKeys.map((k) => k.key), teacherIds, classIds, studentIds, flooderId: flooder.user.id, ms: performance.now() - t0 };
  },
  /**
   * One storm's rooms: a live class per class (ENROLLED), those whose index is in `waiting` with a waiting
   * room, and with `flood` a meeting of its own for the flooding socket (ORG_MEMBERS, no waiting room).
   */
  async stormMeetings({ orgId, classIds, teacherIds, waiting, flood, tag }: { orgId: string; classIds: string[]; teacherIds: string[]; waiting: number[]; flood: boolean; tag: string }) {
    const waitingRoom = new Set(waiting);
    const scheduledStart = new Date(clock.now() + 60_000).toISOString();
    const rooms = await pool(8, classIds.length, async (r) => {
      const m = await services.meetings.create(sql, orgId, {
        title: `Storm ${tag} class ${r}`,
        type: 'CLASS',
        classId: classIds[r]!,
        hostUserId: teacherIds[r]!,
        scheduledStart,
        durationMinutes: 60,
        access: { mode: 'ENROLLED' },
        settings: { waitingRoom: waitingRoom.has(r) },
      });
      return { id: m.id, slug: m.slug, waitingRoom: waitingRoom.has(r) };
    });
    const floodRoom = flood
      ? await services.meetings.create(sql, orgId, { title: `Storm ${tag} flood`, type: 'MEETING', hostUserId: teacherIds[0]!, scheduledStart, durationMinutes: 60 })
      : null;
    return { rooms, flood: floodRoom ? { id: floodRoom.id, slug: floodRoom.slug } : null };
  },
  /** `n` asks one after another (an event with a boolean `raise` flips it each time); the latency of each in microseconds. */
  async askLoop({ actorId, event, n }: { actorId: string; event: Record<string, unknown>; n: number }) {
    const us: number[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const e = typeof event.raise === 'boolean' ? { ...event, raise: i % 2 === 0 } : event;
      const t0 = performance.now();
      await cluster.ask(actorId, e);
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

serveRpc(commands, { nodeId, port: node.port, url: node.url, pid: process.pid }, () => void shutdown(0));
