/**
 * The flooding participant of the join storm (bench/storm.ts), in a process of its own so that sending
 * the flood costs the storm's load generator nothing. Driven over stdin (bench/lib/rpc.ts).
 *
 * A student joins a room of their own the way every student does (join link, exchange, room socket) and
 * then sends `rate` commands a second, `raise-hand` and `lower-hand` in turn: commands that reach the
 * room's actor (each a transition and a commit) and cost 10 of the socket's budget (docs/room-protocol.md:
 * a bucket of 200 refilled at 50 a second; more than 100 refusals within 10 s close the socket with 1008).
 * With `reconnect`, a closed socket is opened again at once with the same mediaToken (within the reconnect
 * grace, so the same participant), as a client that does not give up would, and the flood goes on.
 */
import type WebSocket from 'ws';
import { serveRpc } from '../lib/rpc-serve.ts';
import { Nodes, messageType, ok, openSocket } from '../lib/storm-client.ts';

interface Stats {
  sent: number;
  /** commands the socket could not send: it was closed and not open again yet */
  skipped: number;
  acked: number;
  ok: number;
  refused: Record<string, number>;
  closes: Record<string, number>;
  reconnects: number;
  reconnectFailures: Record<string, number>;
  /** ms from a close to the next `joined` */
  reconnectMs: number[];
  floodMs: number;
}

let nodes: Nodes | null = null;
let ws: WebSocket | null = null;
let flooding = false;
let timer: NodeJS.Timeout | null = null;
let stats: Stats;
let t0 = 0;
const bump = (o: Record<string, number>, k: string) => (o[k] = (o[k] ?? 0) + 1);

const commands: Record<string, (args: any) => Promise<unknown>> = {
  /** Joins the flood room and starts flooding; resolves once the first socket joined. */
  async start({ urls, key, meetingId, userId, rate, reconnect }: { urls: string[]; key: string; meetingId: string; userId: string; rate: number; reconnect: boolean }) {
    nodes ??= new Nodes(urls, 2);
    const m = nodes;
    stats = { sent: 0, skipped: 0, acked: 0, ok: 0, refused: {}, closes: {}, reconnects: 0, reconnectFailures: {}, reconnectMs: [], floodMs: 0 };
    const link = await ok('flood mint', m.request('POST', `/api/v1/public/meetings/${meetingId}/join-links`, { body: { userId }, headers: { authorization: `Bearer ${key}` } }));
    const s = await ok('flood exchange', m.request('POST', '/api/v1/join-tokens/exchange', { body: { token: link.body.data.token, deviceId: `flooder-${meetingId}` }, headers: { 'x-forwarded-for': '172.16.0.1' } }));
    const { mediaUrl, mediaToken } = s.body.data as { mediaUrl: string; mediaToken: string };
    let n = 0;
    const connect = async (): Promise<void> => {
      const closedAt = performance.now();
      for (;;) {
        try {
          const opened = await openSocket('flood join', m.socketUrl(n++ % m.urls.length, mediaUrl, mediaToken), ['joined'], { timeoutMs: 10_000 });
          if (ws) stats.reconnectMs.push(performance.now() - closedAt);
          ws = opened.ws;
          break;
        } catch (err) {
          bump(stats.reconnectFailures, (err as { code?: string }).code ?? 'error');
          if (!flooding) return;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const sock = ws!;
      sock.on('message', (data: Buffer) => {
        if (messageType(data) !== 'ack') return;
        stats.acked++;
        const a = JSON.parse(data.toString('utf8'));
        if (a.ok) stats.ok++;
        else bump(stats.refused, a.error?.code ?? 'error');
      });
      sock.once('close', (code) => {
        bump(stats.closes, String(code));
        if (ws === sock) ws = null;
        if (flooding && reconnect) {
          stats.reconnects++;
          void connect();
        }
      });
    };
    flooding = true;
    await connect();
    const perTick = Math.max(1, Math.round(rate / 100));
    let seq = 0;
    t0 = performance.now();
    timer = setInterval(() => {
      for (let k = 0; k < perTick; k++) {
        const sock = ws;
        if (!sock || sock.readyState !== 1) {
          stats.skipped++;
          continue;
        }
        seq++;
        sock.send(`{"type":"${seq % 2 ? 'raise-hand' : 'lower-hand'}","id":"f${seq}"}`);
        stats.sent++;
      }
    }, 10);
    return { joined: true };
  },
  /** Stops the flood, leaves, and answers what happened. */
  async stop() {
    flooding = false;
    if (timer) clearInterval(timer);
    timer = null;
    stats.floodMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 300));
    const sock = ws;
    ws = null;
    if (sock && sock.readyState === 1) {
      sock.send('{"type":"leave","id":"bye"}');
      await new Promise((r) => setTimeout(r, 200));
    }
    sock?.terminate();
    return stats;
  },
};

const shutdown = () => {
  flooding = false;
  ws?.terminate();
  void nodes?.close();
  setTimeout(() => process.exit(0), 100);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
serveRpc(commands, { pid: process.pid }, shutdown);
