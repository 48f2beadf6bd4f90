/**
 * One student of the join storm (bench/storm.ts), the whole path a student takes, each step timed:
 * the customer's backend mints the join link, the page exchanges it; in a room with a waiting room it
 * waits on a socket opened with its accessToken until `admitted` and asks for the room token; it opens
 * the room socket and waits for `joined`; a student of the media sample then joins the room's media with
 * mediasoup-client (as web/room/media.ts does) until the first RTP packet of the teacher's audio arrives.
 * The room socket stays open (the student stays in class) until the storm is over.
 */
import type WebSocket from 'ws';
import { Commands, type Nodes, messageType, ok, openSocket, StepError } from './storm-client.ts';
import type { StormPeer } from './storm-media.ts';

export const STEPS = ['mint', 'exchange', 'admission', 'room token', 'ws join', 'first packet'] as const;
export type Step = (typeof STEPS)[number];

export interface StudentRecord {
  i: number;
  room: number;
  waitingRoom: boolean;
  media: boolean;
  /** how late the student started against the schedule (ms): the load generator's own lag */
  lagMs: number;
  steps: Partial<Record<Step, number>>;
  /** from the scheduled arrival to `joined` */
  arrivalToJoinedMs?: number;
  /** media sample: times after `joined` (ms) */
  mediaTimes?: Record<string, number>;
  error?: { step: string; code: string; message: string };
}

export interface StormRoom {
  id: string;
  slug: string;
  waitingRoom: boolean;
}

export interface StudentContext {
  lb: Nodes;
  rooms: StormRoom[];
  keys: string[];
  studentIds: string[];
  /** the storm's number: students' addresses are 10.<block>.x.y and device ids carry it */
  ipBlock: number;
  stepTimeoutMs: number;
  /** the customer's backend's address (mint requests) */
  backendIp: string;
  /** keeps an open room socket (and the student's media) until the storm is over */
  hold(ws: WebSocket, peer: StormPeer | null): void;
  /** the media sample's WebRTC (loaded only where media students run) */
  newPeer?: (ask: Commands['ask']) => StormPeer;
}

/**
 * `count` of `total` rooms, spread evenly and starting at `offset` (rooms with a waiting room, rooms whose
 * teacher sends audio): e.g. 10 of 40 from 0 are 0, 4, 8, …; from 2 they are 2, 6, 10, ….
 */
export function spread(count: number, total: number, offset: number): Set<number> {
  const out = new Set<number>();
  for (let k = 0; k < count; k++) out.add((Math.floor((k * total) / count) + offset) % total);
  return out;
}

/** Whether student i (room i % rooms) is in the media sample: every Nth arrival of each room with audio. */
export function inMediaSample(i: number, rooms: number, audioRooms: Set<number>, every: number): boolean {
  const r = i % rooms;
  return every > 0 && audioRooms.has(r) && Math.floor(i / rooms) % every === r % every;
}

export async function runStudent(ctx: StudentContext, i: number, due: number, media: boolean): Promise<StudentRecord> {
  const { lb } = ctx;
  const roomIndex = i % ctx.rooms.length;
  const r = ctx.rooms[roomIndex]!;
  const rec: StudentRecord = { i, room: roomIndex, waitingRoom: r.waitingRoom, media, lagMs: performance.now() - due, steps: {} };
  const ip = `10.${ctx.ipBlock}.${(i >> 8) & 255}.${i & 255}`;
  const deviceId = `storm-${ctx.ipBlock}-${i}`;
  const timeoutMs = ctx.stepTimeoutMs;
  let step: Step = 'mint';
  try {
    const link = await ok(
      'mint',
      lb.request('POST', `/api/v1/public/meetings/${r.id}/join-links`, { body: { userId: ctx.studentIds[i] }, headers: { authorization: `Bearer ${ctx.keys[i % ctx.keys.length]}`, 'x-forwarded-for': ctx.backendIp }, timeoutMs }),
    );
    rec.steps.mint = link.ms;
    step = 'exchange';
    const ex = await ok('exchange', lb.request('POST', '/api/v1/join-tokens/exchange', { body: { token: link.body.data.token, deviceId }, headers: { 'x-forwarded-for': ip }, timeoutMs }));
    rec.steps.exchange = ex.ms;
    const session = ex.body.data;
    let mediaToken: string | null = session.mediaToken;
    let mediaUrl: string = session.mediaUrl;
    if (!mediaToken) {
      if (!session.waitingRoom) throw new StepError('exchange', 'no mediaToken and no waiting room');
      step = 'admission';
      const waiting = await openSocket('admission', lb.socketUrl(lb.nextWs(), mediaUrl, session.accessToken), ['admitted'], { headers: { 'x-forwarded-for': ip }, timeoutMs });
      rec.steps.admission = waiting.ms;
      waiting.ws.on('error', () => {});
      waiting.ws.close();
      step = 'room token';
      const tok = await ok(
        'room token',
        lb.request('POST', `/api/v1/meetings/${r.slug}/token`, { body: { queueId: session.waitingRoom.queueId, deviceId }, headers: { authorization: `Bearer ${session.accessToken}`, 'x-forwarded-for': ip }, timeoutMs }),
      );
      rec.steps['room token'] = tok.ms;
      mediaToken = tok.body.data.mediaToken as string;
      mediaUrl = tok.body.data.mediaUrl as string;
    }
    step = 'ws join';
    const sock = await openSocket('ws join', lb.socketUrl(lb.nextWs(), mediaUrl, mediaToken), ['joined'], { headers: { 'x-forwarded-for': ip }, timeoutMs });
    const joinedAt = performance.now();
    rec.steps['ws join'] = sock.ms;
    rec.arrivalToJoinedMs = joinedAt - due;
    if (!media || !ctx.newPeer) {
      ctx.hold(sock.ws, null);
      return rec;
    }
    step = 'first packet';
    const cmds = new Commands(sock.ws, timeoutMs);
    const peer = ctx.newPeer(cmds.ask);
    ctx.hold(sock.ws, peer);
    cmds.onMessage = (m) => {
      if (m.type === 'consumer-new') peer.onConsumerNew(m);
    };
    const first = peer.firstPacket(timeoutMs);
    first.catch(() => {});
    const t = await peer.start({ send: true });
    const at = await first;
    rec.steps['first packet'] = at - joinedAt;
    // measured: the consumers are closed on the server (consumer-close), so that a hundred libwebrtc
    // receivers decoding audio for the rest of the storm do not take the machine's CPU from the nodes
    await peer.stopReceiving();
    rec.mediaTimes = { mediaJoin: t.mediaJoin! - joinedAt, transports: t.transports! - joinedAt, mediaReady: t.mediaReady! - joinedAt, resumed: peer.firstResumedAt - joinedAt, firstPacket: at - joinedAt };
  } catch (err) {
    const e = err instanceof StepError ? err : new StepError(step, (err as { code?: string }).code ?? 'error', (err as Error).message);
    rec.error = { step: (STEPS as readonly string[]).includes(e.step) ? e.step : `${step} (${e.step})`, code: e.code, message: e.message.slice(0, 300) };
  }
  return rec;
}

/**
 * Every held socket sends `leave`, paced evenly over `overMs`, and waits for its close (at most 30 s after
 * the last leave); the close codes counted, and how long the leaves took to be answered.
 */
export async function leaveAll(held: { ws: WebSocket; peer: StormPeer | null }[], overMs: number): Promise<{ closed: Record<string, number>; refused: Record<string, number>; ackMs: number[] }> {
  const closed: Record<string, number> = {};
  const refused: Record<string, number> = {};
  const ackMs: number[] = [];
  const bump = (o: Record<string, number>, k: string) => (o[k] = (o[k] ?? 0) + 1);
  const t0 = performance.now();
  const gap = held.length ? overMs / held.length : 0;
  await Promise.all(
    held.map(
      (h, k) =>
        new Promise<void>((resolve) => {
          const go = () => {
            h.peer?.close();
            if (h.ws.readyState !== 1) {
              bump(closed, 'already closed');
              return resolve();
            }
            const sent = performance.now();
            let done = false;
            const finish = (outcome: string) => {
              if (done) return;
              done = true;
              clearTimeout(timer);
              bump(closed, outcome);
              resolve();
            };
            const timer = setTimeout(() => {
              finish('timeout');
              h.ws.terminate();
            }, 30_000);
            h.ws.on('message', (data: Buffer) => {
              if (messageType(data) !== 'ack') return;
              const a = JSON.parse(data.toString('utf8'));
              if (a.id === 'leave' && !a.ok) bump(refused, a.error?.code ?? 'error');
            });
            h.ws.once('close', (code) => {
              if (code === 4000 && !done) ackMs.push(performance.now() - sent);
              finish(String(code));
            });
            h.ws.send('{"type":"leave","id":"leave"}');
          };
          const wait = t0 + k * gap - performance.now();
          if (wait >= 1) setTimeout(go, wait);
          else go();
        }),
    ),
  );
  return { closed, refused, ackMs };
}

/** Time on a clock every process of the machine shares (ms since the epoch, sub-millisecond). */
export const epochNow = (): number => performance.timeOrigin + performance.now();

/**
 * Runs students `indices` open-loop: student i starts at `t0Epoch + i * intervalMs` (epoch ms) whatever
 * became of the others; resolves with every record once all are done.
 */
export async function runSchedule(ctx: StudentContext, indices: number[], t0Epoch: number, intervalMs: number, media: (i: number) => boolean): Promise<StudentRecord[]> {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const flows: Promise<StudentRecord>[] = [];
  for (const i of indices) {
    const due = t0Epoch + i * intervalMs - performance.timeOrigin;
    const wait = due - performance.now();
    if (wait >= 1) await sleep(wait);
    flows.push(runStudent(ctx, i, due, media(i)));
  }
  return Promise.all(flows);
}
