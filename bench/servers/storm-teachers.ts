/**
 * The teachers of the join storm (bench/storm.ts), in a process of their own so that their WebRTC
 * (libwebrtc encoding a tone per teacher) is neither the storm's load generator nor counted in it.
 * Driven over stdin (bench/lib/rpc.ts). Each teacher takes the whole path a host takes: a HOST join link
 * minted by the customer's backend, its exchange, the room socket, then media as the page does (a
 * sending and a receiving transport, media-ready) and, in the rooms chosen to carry audio, a microphone
 * producer sending a 400 Hz tone (libwebrtc encodes Opus: about 12 ms of CPU a second per teacher here). In rooms with a waiting room the teacher admits everyone listed as waiting, at once, over the
 * room socket (`admit`), as a host clicking "admit" would.
 */
import type WebSocket from 'ws';
import { serveRpc } from '../lib/rpc-serve.ts';
import { Commands, Nodes, ok, openSocket, StepError } from '../lib/storm-client.ts';
import { exitNow, StormPeer } from '../lib/storm-media.ts';
import { pool } from '../lib/pool.ts';

interface Room {
  id: string;
  slug: string;
  waitingRoom: boolean;
}
interface Teacher {
  room: Room;
  ws: WebSocket;
  cmds: Commands;
  peer: StormPeer;
  asked: Set<string>;
}

let nodes: Nodes | null = null;
let teachers: Teacher[] = [];
const stats = { admits: 0, admitErrors: {} as Record<string, number>, closedEarly: {} as Record<string, number> };
let ending = false;


const bump = (o: Record<string, number>, k: string) => (o[k] = (o[k] ?? 0) + 1);

function admitAll(t: Teacher, entries: { queueId: string }[]): void {
  for (const e of entries) {
    if (t.asked.has(e.queueId)) continue;
    t.asked.add(e.queueId);
    t.cmds.ask({ type: 'admit', queueId: e.queueId }).then(
      () => stats.admits++,
      (err: StepError) => bump(stats.admitErrors, err.code ?? 'error'),
    );
  }
}

const commands: Record<string, (args: any) => Promise<unknown>> = {
  /** Every teacher into their room (media joined as the page does), those of rooms in `audio` sending a tone; resolves once all are in. */
  async enter({ urls, key, rooms, hostUserIds, ipBlock, audio }: { urls: string[]; key: string; rooms: Room[]; hostUserIds: string[]; ipBlock: number; audio: number[] }) {
    const sending = new Set(audio);
    nodes ??= new Nodes(urls, 8);
    const m = nodes;
    ending = false;
    stats.admits = 0;
    stats.admitErrors = {};
    stats.closedEarly = {};
    const t0 = performance.now();
    teachers = await pool(8, rooms.length, async (r) => {
      const room = rooms[r]!;
      const link = await ok('teacher mint', m.request('POST', `/api/v1/public/meetings/${room.id}/join-links`, { body: { userId: hostUserIds[r], role: 'HOST' }, headers: { authorization: `Bearer ${key}` } }));
      const s = await ok(
        'teacher exchange',
        m.request('POST', '/api/v1/join-tokens/exchange', { body: { token: link.body.data.token, deviceId: `teacher-${ipBlock}-${r}` }, headers: { 'x-forwarded-for': `192.168.${ipBlock}.${r % 250}` } }),
      );
      const { ws } = await openSocket('teacher join', m.socketUrl(r % m.urls.length, s.body.data.mediaUrl, s.body.data.mediaToken), ['joined']);
      const cmds = new Commands(ws);
      const peer = new StormPeer(cmds.ask);
      const t: Teacher = { room, ws, cmds, peer, asked: new Set() };
      cmds.onMessage = (msg) => {
        if (msg.type === 'waiting-room') admitAll(t, msg.entries);
        else if (msg.type === 'consumer-new') peer.onConsumerNew(msg);
      };
      ws.on('close', (code) => {
        if (!ending) bump(stats.closedEarly, String(code));
      });
      await peer.start({ send: true });
      if (sending.has(r)) await peer.produceTone();
      return t;
    });
    return { teachers: teachers.length, ms: performance.now() - t0 };
  },
  async stats() {
    return stats;
  },
  /** Every teacher ends their meeting for everyone (`end`) and drops their media. */
  async end() {
    ending = true;
    const out = { ended: 0, errors: {} as Record<string, number> };
    await pool(8, teachers.length, async (i) => {
      const t = teachers[i]!;
      try {
        await t.cmds.ask({ type: 'end' });
        out.ended++;
      } catch (err) {
        bump(out.errors, (err as StepError).code ?? 'error');
      }
      t.peer.close();
      t.ws.terminate();
    });
    teachers = [];
    return out;
  },
};

const shutdown = () => {
  for (const t of teachers) t.peer.close();
  void nodes?.close();
  setTimeout(() => exitNow(0), 100);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
serveRpc(commands, { pid: process.pid }, shutdown);
