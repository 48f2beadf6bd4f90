import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import type { Test } from 'tap';

/**
 * A bad network link between one WebRTC client and the media server, for machines without netem: a UDP
 * relay on 127.0.0.1 that the client is told is the server (its ICE candidate). Datagrams from the
 * client go on to the server's real UDP port and the answers come back, each direction through its own
 * bottleneck: a share of datagrams lost at random (seeded, so a run can be repeated), then a token
 * bucket paced to a rate with a bounded queue; what overflows the queue is dropped, as at a real
 * bottleneck. mediasoup is ICE-lite and answers STUN from whatever address sends it, so the relay needs
 * no knowledge of ICE: each client address it hears from gets a socket of its own towards the server.
 */

export interface LinkConditions {
  /** Fraction of datagrams dropped at random in each direction (0 to 1). */
  loss: number;
  /** The link's rate in each direction, kbit/s; null: unlimited. */
  rateKbps: number | null;
  /** How much the bottleneck's queue holds, in ms at the rate: what arrives beyond it is dropped. */
  queueMs: number;
}

export interface DirectionStats {
  /** Datagrams that reached the link, and their bytes. */
  in: number;
  inBytes: number;
  /** Dropped at random (loss), and dropped because the queue was full (overflow). */
  lost: number;
  overflow: number;
  /** Delivered, and their bytes. */
  out: number;
  outBytes: number;
}

export interface LossyLink {
  /** The relay's port on 127.0.0.1: the address to give the client as the server's. */
  readonly port: number;
  /** Client to server (`up`) and server to client (`down`). */
  readonly stats: { up: DirectionStats; down: DirectionStats };
  /** The client addresses heard so far (ICE may try several local candidates). */
  readonly clients: string[];
  /** Changes the conditions from now on (what is queued keeps its place). */
  set(conditions: Partial<LinkConditions>): void;
  close(): Promise<void>;
}

/** mulberry32: a small seeded generator, so a run's losses can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** One direction of the link: loss, then a token bucket (a burst of BURST_BYTES) and a FIFO bounded by queueMs at the rate. */
class Bottleneck {
  readonly stats: DirectionStats = { in: 0, inBytes: 0, lost: 0, overflow: 0, out: 0, outBytes: 0 };
  static readonly BURST_BYTES = 3000;
  #queue: { data: Buffer; send: (data: Buffer) => void }[] = [];
  #queued = 0;
  #tokens = Bottleneck.BURST_BYTES;
  #refilled = performance.now();
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(
    private readonly conditions: () => LinkConditions,
    private readonly rand: () => number,
  ) {}

  push(data: Buffer, send: (data: Buffer) => void): void {
    if (this.#closed) return;
    const c = this.conditions();
    this.stats.in++;
    this.stats.inBytes += data.length;
    if (c.loss > 0 && this.rand() < c.loss) {
      this.stats.lost++;
      return;
    }
    if (c.rateKbps === null) return this.#deliver(data, send);
    this.#refill(c.rateKbps);
    if (this.#queue.length === 0 && this.#tokens >= data.length) {
      this.#tokens -= data.length;
      return this.#deliver(data, send);
    }
    const limit = ((c.rateKbps * 1000) / 8) * (c.queueMs / 1000);
    if (this.#queued + data.length > limit) {
      this.stats.overflow++;
      return;
    }
    this.#queue.push({ data, send });
    this.#queued += data.length;
    this.#schedule(c.rateKbps);
  }

  #refill(rateKbps: number): void {
    const now = performance.now();
    this.#tokens = Math.min(Bottleneck.BURST_BYTES, this.#tokens + ((now - this.#refilled) / 1000) * ((rateKbps * 1000) / 8));
    this.#refilled = now;
  }

  #schedule(rateKbps: number): void {
    if (this.#timer || this.#queue.length === 0) return;
    const need = this.#queue[0]!.data.length - this.#tokens;
    const ms = Math.max(1, Math.ceil((need / ((rateKbps * 1000) / 8)) * 1000));
    this.#timer = setTimeout(() => this.#drain(), ms);
  }

  #drain(): void {
    this.#timer = null;
    if (this.#closed) return;
    const c = this.conditions();
    if (c.rateKbps === null) {
      for (const q of this.#queue.splice(0)) this.#deliver(q.data, q.send);
      this.#queued = 0;
      return;
    }
    this.#refill(c.rateKbps);
    while (this.#queue.length && this.#tokens >= this.#queue[0]!.data.length) {
      const q = this.#queue.shift()!;
      this.#queued -= q.data.length;
      this.#tokens -= q.data.length;
      this.#deliver(q.data, q.send);
    }
    this.#schedule(c.rateKbps);
  }

  #deliver(data: Buffer, send: (data: Buffer) => void): void {
    this.stats.out++;
    this.stats.outBytes += data.length;
    send(data);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#queue = [];
  }
}

/**
 * Starts a link to the server's UDP address `to` (closed at teardown). `seed` makes the losses of a run
 * repeatable (each direction draws from its own sequence).
 */
export async function lossyLink(t: Test, to: { ip: string; port: number }, conditions: Partial<LinkConditions> = {}, seed = 1): Promise<LossyLink> {
  let now: LinkConditions = { loss: 0, rateKbps: null, queueMs: 150, ...conditions };
  const up = new Bottleneck(() => now, random(seed));
  const down = new Bottleneck(() => now, random(seed ^ 0x9e3779b9));
  const front = createSocket('udp4');
  const backs = new Map<string, Socket>();
  const clients: string[] = [];

  const backFor = (client: RemoteInfo): Socket => {
    const key = `${client.address}:${client.port}`;
    let back = backs.get(key);
    if (back) return back;
    back = createSocket('udp4');
    back.on('message', (data) => down.push(data, (d) => front.send(d, client.port, client.address, () => {})));
    back.on('error', () => {});
    back.bind(0, '127.0.0.1');
    backs.set(key, back);
    clients.push(key);
    return back;
  };
  front.on('message', (data, client) => {
    const back = backFor(client);
    up.push(data, (d) => back.send(d, to.port, to.ip, () => {}));
  });
  front.on('error', () => {});
  await new Promise<void>((resolve) => front.bind(0, '127.0.0.1', resolve));
  const port = front.address().port;

  let closed = false;
  const link: LossyLink = {
    port,
    stats: { up: up.stats, down: down.stats },
    clients,
    set(c) {
      now = { ...now, ...c };
    },
    async close() {
      if (closed) return;
      closed = true;
      up.close();
      down.close();
      await Promise.all([front, ...backs.values()].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
  t.teardown(() => link.close());
  return link;
}
