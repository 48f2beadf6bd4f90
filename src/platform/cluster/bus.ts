import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';

export type BusHandler = (message: Record<string, unknown>) => void;

/** Fire-and-forget notifications between nodes: cache invalidation, job wake-ups. */
export interface Bus {
  publish(channel: string, message: Record<string, unknown>): Promise<void>;
  subscribe(channel: string, handler: BusHandler): void;
  close(): Promise<void>;
}

/** One process: handlers run in this process only. */
export class LocalBus implements Bus {
  readonly #emitter = new EventEmitter().setMaxListeners(0);
  async publish(channel: string, message: Record<string, unknown>): Promise<void> {
    this.#emitter.emit(channel, message);
  }
  subscribe(channel: string, handler: BusHandler): void {
    this.#emitter.on(channel, handler);
  }
  async close(): Promise<void> {
    this.#emitter.removeAllListeners();
  }
}

/**
 * Redis pub/sub. The publishing node also runs its own handlers at once, so its next request reads
 * its own writes; the echo that arrives back from Redis is dropped by origin id.
 */
export class RedisBus implements Bus {
  readonly #local = new LocalBus();
  readonly #pub: Redis;
  readonly #sub: Redis;
  readonly #prefix: string;
  readonly #origin: string;
  readonly #channels = new Set<string>();

  constructor(pub: Redis, prefix: string, origin: string) {
    this.#pub = pub;
    this.#sub = pub.duplicate({ enableAutoPipelining: false, enableReadyCheck: false }); // see RedisCluster's subscriber
    this.#sub.on('error', () => {}); // the publishing connection, to the same server, reports connection errors
    this.#prefix = `${prefix}bus:`;
    this.#origin = origin;
    this.#sub.on('message', (ch: string, raw: string) => {
      let msg: { o?: string; m?: Record<string, unknown> };
      try {
        msg = JSON.parse(raw);
      } catch {
        return;
      }
      if (msg.o === this.#origin || !msg.m) return;
      void this.#local.publish(ch.slice(this.#prefix.length), msg.m);
    });
  }

  async publish(channel: string, message: Record<string, unknown>): Promise<void> {
    await this.#local.publish(channel, message);
    await this.#pub.publish(this.#prefix + channel, JSON.stringify({ o: this.#origin, m: message }));
  }

  subscribe(channel: string, handler: BusHandler): void {
    this.#local.subscribe(channel, handler);
    if (!this.#channels.has(channel)) {
      this.#channels.add(channel);
      // ioredis subscribes again after a reconnect; a refusal here (closing) lets a later call retry
      this.#sub.subscribe(this.#prefix + channel).catch(() => this.#channels.delete(channel));
    }
  }

  async ready(): Promise<void> {
    if (this.#channels.size) await this.#sub.subscribe(...[...this.#channels].map((c) => this.#prefix + c));
  }

  async close(): Promise<void> {
    await this.#local.close();
    this.#sub.disconnect();
  }
}
