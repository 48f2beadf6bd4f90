import { createSocket, type Socket } from 'node:dgram';
import { readdirSync, readFileSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

/**
 * The class bench's receivers: UDP sockets on 127.0.0.1 that every receiving PlainTransport sends to,
 * read in a worker thread of their own (the generator's timers stay on the main thread). Per SSRC (one
 * consumer each) it counts packets and bytes (the UDP payload: SRTP packets, headers and auth tag
 * included) and RTP loss as a receiver reports it: from the first sequence number seen after `reset`
 * to the highest, how many never came. mediasoup keeps a consumer's sequence numbers continuous across
 * layer switches, so a gap is a packet the worker lost or never got, not one it chose to drop.
 */

export interface SsrcCounts {
  ssrc: number;
  packets: number;
  bytes: number;
  /** packets the sequence numbers say were sent (highest - first + 1, with wrap-around) */
  expected: number;
}

export interface ClassSinkCounts {
  perSsrc: SsrcCounts[];
  rtcp: number;
}

type Command =
  | { id: number; type: 'bind'; sockets: number; rcvbuf: number }
  | { id: number; type: 'reset' }
  | { id: number; type: 'collect' }
  | { id: number; type: 'close' };

interface Stream {
  packets: number;
  bytes: number;
  first: number;
  /** extended highest sequence number */
  high: number;
}

function sinkThread(): void {
  const sockets: Socket[] = [];
  let streams = new Map<number, Stream>();
  let rtcp = 0;

  const onPacket = (buf: Buffer): void => {
    if (buf.length < 12) return;
    const b1 = buf[1]!;
    if (b1 >= 192 && b1 <= 223) {
      rtcp++;
      return;
    }
    const ssrc = buf.readUInt32BE(8);
    const seq = buf.readUInt16BE(2);
    const s = streams.get(ssrc);
    if (!s) {
      streams.set(ssrc, { packets: 1, bytes: buf.length, first: seq, high: seq });
      return;
    }
    s.packets++;
    s.bytes += buf.length;
    // the extended sequence number nearest the highest so far (RFC 3550, A.1)
    const cycle = s.high & ~0xffff;
    let ext = cycle | seq;
    if (ext < s.high - 0x8000) ext += 0x10000;
    else if (ext > s.high + 0x8000) ext -= 0x10000;
    if (ext > s.high) s.high = ext;
  };

  const reply = (id: number, value: unknown) => parentPort!.postMessage({ id, value });
  parentPort!.on('message', (m: Command) => {
    switch (m.type) {
      case 'bind': {
        let bound = 0;
        const ports: number[] = [];
        for (let i = 0; i < m.sockets; i++) {
          const s = createSocket({ type: 'udp4', recvBufferSize: m.rcvbuf });
          s.on('message', onPacket);
          s.bind(0, '127.0.0.1', () => {
            ports[i] = s.address().port;
            if (++bound === m.sockets) reply(m.id, { ports, rcvbuf: s.getRecvBufferSize() });
          });
          sockets.push(s);
        }
        return;
      }
      case 'reset':
        streams = new Map();
        rtcp = 0;
        return reply(m.id, null);
      case 'collect':
        return reply(m.id, {
          perSsrc: [...streams].map(([ssrc, s]) => ({ ssrc, packets: s.packets, bytes: s.bytes, expected: s.high - s.first + 1 })),
          rtcp,
        } satisfies ClassSinkCounts);
      case 'close':
        for (const s of sockets) s.close();
        reply(m.id, null);
        parentPort!.close();
        return;
    }
  });
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'class-sink') sinkThread();

const threadIds = (): Set<string> => {
  try {
    return new Set(readdirSync('/proc/self/task'));
  } catch {
    return new Set();
  }
};

export class ClassSink {
  ports: number[] = [];
  rcvbuf = 0;
  /** the sink thread's kernel task ids, for its CPU time */
  readonly tids: string[];
  readonly #worker: Worker;
  #next = 1;
  readonly #pending = new Map<number, (v: unknown) => void>();

  private constructor(worker: Worker, tids: string[]) {
    this.#worker = worker;
    this.tids = tids;
    worker.on('message', (m: { id: number; value: unknown }) => {
      this.#pending.get(m.id)?.(m.value);
      this.#pending.delete(m.id);
    });
  }

  static async start(sockets: number, rcvbuf: number): Promise<ClassSink> {
    const before = threadIds();
    // as in rtp-sink.ts: the thread registers tsx itself before importing this file
    const boot = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const worker = new Worker(boot, { eval: true, execArgv: [], workerData: { role: 'class-sink' } });
    await new Promise<void>((resolve, reject) => {
      worker.once('online', resolve);
      worker.once('error', reject);
    });
    const sink = new ClassSink(worker, [...threadIds()].filter((id) => !before.has(id)));
    const bound = (await sink.#call({ type: 'bind', sockets, rcvbuf })) as { ports: number[]; rcvbuf: number };
    sink.ports = bound.ports;
    sink.rcvbuf = bound.rcvbuf;
    return sink;
  }

  #call(m: { type: Command['type'] } & Record<string, unknown>): Promise<unknown> {
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      this.#worker.postMessage({ ...m, id });
    });
  }

  /** Forget everything counted: the window starts. */
  reset(): Promise<unknown> {
    return this.#call({ type: 'reset' });
  }

  collect(): Promise<ClassSinkCounts> {
    return this.#call({ type: 'collect' }) as Promise<ClassSinkCounts>;
  }

  /** CPU ticks (user + system) of the sink thread so far. */
  cpuTicks(): number {
    let n = 0;
    for (const tid of this.tids) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        n += Number(f[11]) + Number(f[12]);
      } catch {
        // the thread is gone
      }
    }
    return n;
  }

  async close(): Promise<void> {
    await Promise.race([this.#call({ type: 'close' }), new Promise((r) => setTimeout(r, 1000))]);
    await this.#worker.terminate();
  }
}
