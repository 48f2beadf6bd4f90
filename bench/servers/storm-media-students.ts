/**
 * The join storm's media sample (bench/storm.ts): the students who, after `joined`, also join the room's
 * media over WebRTC (mediasoup-client on libwebrtc) until the first RTP packet of the teacher's audio.
 * They run in a process of their own, on the same schedule as the others (a shared epoch clock), so that
 * libwebrtc's synchronous work (loading the Device, making peer connections) never stalls the event loop
 * that times the other students. Driven over stdin (bench/lib/rpc.ts).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type WebSocket from 'ws';
import { serveRpc } from '../lib/rpc-serve.ts';
import { Nodes } from '../lib/storm-client.ts';
import { exitNow, StormPeer } from '../lib/storm-media.ts';
import { leaveAll, runSchedule, type StormRoom, type StudentContext } from '../lib/storm-student.ts';

let lb: Nodes | null = null;
let held: { ws: WebSocket; peer: StormPeer | null }[] = [];
let dropped: Record<string, number> = {};
let leaving = false;
const ELD_RESOLUTION_MS = 5;

const commands: Record<string, (args: any) => Promise<unknown>> = {
  async run(a: { urls: string[]; connections: number; rooms: StormRoom[]; keys: string[]; studentIds: string[]; ipBlock: number; stepTimeoutMs: number; backendIp: string; indices: number[]; t0Epoch: number; intervalMs: number }) {
    lb ??= new Nodes(a.urls, a.connections);
    held = [];
    dropped = {};
    leaving = false;
    const ctx: StudentContext = {
      lb,
      rooms: a.rooms,
      keys: a.keys,
      studentIds: a.studentIds,
      ipBlock: a.ipBlock,
      stepTimeoutMs: a.stepTimeoutMs,
      backendIp: a.backendIp,
      hold(ws, peer) {
        held.push({ ws, peer });
        ws.on('error', () => {});
        ws.once('close', (code) => {
          if (!leaving) dropped[String(code)] = (dropped[String(code)] ?? 0) + 1;
        });
      },
      newPeer: (ask) => new StormPeer(ask),
    };
    const eld = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
    eld.enable();
    const records = await runSchedule(ctx, a.indices, a.t0Epoch, a.intervalMs, () => true);
    eld.disable();
    const d = (v: number) => Math.max(0, v / 1e6 - ELD_RESOLUTION_MS);
    return { records, eventLoopDelayMs: { p50: d(eld.percentile(50)), p99: d(eld.percentile(99)), max: d(eld.max) } };
  },
  async leave({ overMs }: { overMs: number }) {
    leaving = true;
    const { closed, refused, ackMs } = await leaveAll(held, overMs);
    held = [];
    return { closed, refused, ackMs, dropped };
  },
};

const shutdown = () => {
  for (const h of held) h.peer?.close();
  void lb?.close();
  setTimeout(() => exitNow(0), 100);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
serveRpc(commands, { pid: process.pid }, shutdown);
