import { EventEmitter } from 'node:events';
import * as mediasoup from 'mediasoup';
import type { WebRtcServer } from 'mediasoup/node/lib/WebRtcServer.js';
import type { Worker, WorkerLogLevel } from 'mediasoup/node/lib/Worker.js';
import type { Logger } from '../src/platform/logger.ts';

export interface WorkerPoolOptions {
  size: number;
  listenIp: string;
  announcedIp: string;
  portMin: number;
  portMax: number;
  logLevel: WorkerLogLevel;
  log: Logger;
}

/** One mediasoup worker (a process) and the WebRtcServer every transport on it shares. */
export interface MediaWorker {
  index: number;
  worker: Worker;
  webRtcServer: WebRtcServer;
  port: number;
  /** Consumers on this worker now (all rooms); the pool's load and the rooms' spreading read it. */
  consumers: number;
  /**
   * Consumers promised to receivers placed on this worker and not made yet (a join rush places dozens
   * before the first consumer exists): counted with `consumers` wherever load decides placement.
   */
  reserved: number;
  /** CPU share of one core used over the last sample (0..1+). */
  cpu: number;
  lastCpuMs: number;
  lastSampleAt: number;
}

/** Consumers promised to a receiver on a worker (MediaWorker.reserved), handed over one by one as they are made, the rest given back when its transport closes. */
export class Reservation {
  #left: number;
  constructor(
    readonly worker: MediaWorker,
    need: number,
  ) {
    this.#left = need;
    worker.reserved += need;
  }

  /** One promised consumer was made (it now counts in MediaWorker.consumers). */
  take(): void {
    if (this.#left <= 0) return;
    this.#left--;
    this.worker.reserved--;
  }

  release(): void {
    this.worker.reserved -= this.#left;
    this.#left = 0;
  }
}

export interface WorkerPoolEvents {
  /** A worker died and was replaced at the same index: rooms that were on it must be re-placed. */
  replaced: [index: number];
}

/**
 * The node's mediasoup workers, one per core by default, each with one WebRtcServer listening on one
 * UDP and one TCP port from the configured range (the first free one). A worker that dies is replaced
 * at the same index and `replaced` is emitted, so its rooms can be re-placed.
 */
export class WorkerPool extends EventEmitter<WorkerPoolEvents> {
  readonly #o: WorkerPoolOptions;
  readonly #workers: (MediaWorker | null)[] = [];
  readonly #taken = new Set<number>();
  #closed = false;
  #sampler: NodeJS.Timeout | null = null;

  constructor(o: WorkerPoolOptions) {
    super();
    this.#o = o;
  }

  get size(): number {
    return this.#o.size;
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.#o.size; i++) this.#workers.push(await this.#spawn(i));
    this.#sampler = setInterval(() => void this.sample(), 2000);
    this.#sampler.unref();
  }

  /** The worker at an index, or null while it is being replaced. */
  at(index: number): MediaWorker | null {
    return this.#workers[index] ?? null;
  }

  all(): MediaWorker[] {
    return this.#workers.filter((w): w is MediaWorker => w !== null);
  }

  /** The worker of this node with the fewest consumers (CPU breaks ties), optionally only those with room for `need` more under `capacity`. */
  leastLoaded(capacity = Infinity, need = 0): MediaWorker | null {
    let best: MediaWorker | null = null;
    for (const w of this.all()) {
      const load = w.consumers + w.reserved;
      if (load + need > capacity) continue;
      if (!best || load < best.consumers + best.reserved || (load === best.consumers + best.reserved && w.cpu < best.cpu)) best = w;
    }
    return best;
  }

  /** Reads each worker's CPU time and turns it into a share of a core since the last sample. */
  async sample(): Promise<void> {
    await Promise.all(
      this.all().map(async (w) => {
        try {
          const u = await w.worker.getResourceUsage();
          const cpuMs = u.ru_utime + u.ru_stime;
          const now = performance.now();
          if (w.lastSampleAt > 0 && now > w.lastSampleAt) w.cpu = (cpuMs - w.lastCpuMs) / (now - w.lastSampleAt);
          w.lastCpuMs = cpuMs;
          w.lastSampleAt = now;
        } catch {
          // a worker closing or dying: its replacement starts from zero
        }
      }),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sampler) clearInterval(this.#sampler);
    for (const w of this.all()) w.worker.close();
    this.#workers.length = 0;
    this.#taken.clear();
  }

  async #spawn(index: number): Promise<MediaWorker> {
    const { log } = this.#o;
    const worker = await mediasoup.createWorker({ logLevel: this.#o.logLevel, appData: { index } });
    const { webRtcServer, port } = await this.#listen(worker);
    const mw: MediaWorker = { index, worker, webRtcServer, port, consumers: 0, reserved: 0, cpu: 0, lastCpuMs: 0, lastSampleAt: 0 };
    worker.on('died', (err) => {
      this.#taken.delete(port);
      if (this.#closed) return;
      log.error({ err, index, workerPid: worker.pid }, 'mediasoup worker died; replacing it');
      this.#workers[index] = null;
      void this.#replace(index);
    });
    log.info({ index, workerPid: worker.pid, port }, 'mediasoup worker started');
    return mw;
  }

  async #replace(index: number): Promise<void> {
    for (let attempt = 0; !this.#closed; attempt++) {
      try {
        this.#workers[index] = await this.#spawn(index);
        this.emit('replaced', index);
        return;
      } catch (err) {
        this.#o.log.error({ err, index, attempt }, 'could not replace a mediasoup worker');
        await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** attempt)));
      }
    }
  }

  /** The first port of the range that is free for both UDP and TCP on the listen address. */
  async #listen(worker: Worker): Promise<{ webRtcServer: WebRtcServer; port: number }> {
    const { listenIp, announcedIp, portMin, portMax } = this.#o;
    let lastErr: unknown;
    for (let port = portMin; port <= portMax; port++) {
      if (this.#taken.has(port)) continue;
      try {
        const webRtcServer = await worker.createWebRtcServer({
          listenInfos: [
            { protocol: 'udp', ip: listenIp, announcedIp, port },
            { protocol: 'tcp', ip: listenIp, announcedIp, port },
          ],
        });
        this.#taken.add(port);
        return { webRtcServer, port };
      } catch (err) {
        lastErr = err; // in use by another process: try the next port
      }
    }
    worker.close();
    throw new Error(`no free media port in ${portMin}-${portMax} on ${listenIp}`, { cause: lastErr });
  }
}
