import { randomUUID } from 'node:crypto';
import type { Router } from 'mediasoup/node/lib/Router.js';
import type { DtlsParameters, WebRtcTransport } from 'mediasoup/node/lib/WebRtcTransport.js';
import { ROUTER_CODECS } from '../../../media/codecs.ts';
import type { WorkerPool } from '../../../media/workers.ts';
import { AppError } from '../../core/errors.ts';
import type { IceServer } from '../../core/room-protocol.ts';
import type { Logger } from '../../platform/logger.ts';
import { InOrder } from './in-order.ts';
import type { TurnRelays } from './turn.ts';

/** How long a probe transport stays open: enough for ICE and DTLS over the slowest path a check waits for. */
export const PROBE_TTL_MS = 20_000;

/** The paths a pre-join check tries to the media server: UDP, TCP (ICE/TCP on the WebRtcServer), and through a TURN relay. */
export const PROBE_KINDS = ['udp', 'tcp', 'relay'] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];

export interface Probe {
  kind: ProbeKind;
  transportId: string;
  iceParameters: unknown;
  iceCandidates: unknown[];
  dtlsParameters: unknown;
  sctpParameters: unknown;
}

export interface NetworkCheckAnswer {
  routerRtpCapabilities: unknown;
  probes: Probe[];
  iceServers: IceServer[];
  iceServersExpireAt: string | null;
}

/**
 * The pre-join network check (docs/networks.md): before a person joins, their page connects a throwaway
 * transport over each path (UDP only, TCP only, and through the relays) to a router of this node that
 * carries no media, and says which got through. ICE and DTLS are what a real join needs; no media
 * flows. Each session holds at most one check's probes (a new check closes the last one's), each
 * closed after PROBE_TTL_MS.
 */
export class NetworkCheck {
  readonly #routers = new Map<number, Promise<Router>>();
  readonly #probes = new Map<string, { sessionId: string; transport: WebRtcTransport }>();
  readonly #bySession = new Map<string, string[]>();
  /** One check of a session at a time: checks sent at once would each close only what the others had not made yet. */
  readonly #checks = new InOrder(8);

  constructor(private readonly o: { pool: WorkerPool | null; turn: TurnRelays | null; log: Logger }) {}

  start(sessionId: string): Promise<NetworkCheckAnswer> {
    return this.#checks.run(sessionId, () => this.#start(sessionId));
  }

  async #start(sessionId: string): Promise<NetworkCheckAnswer> {
    const worker = this.o.pool?.leastLoaded() ?? null;
    if (!worker) throw new AppError('media_unavailable', { message: 'This server carries no media; the check cannot run here.' });
    this.#forget(sessionId);
    let router = this.#routers.get(worker.index);
    if (router && (await router.catch(() => null))?.closed !== false) router = undefined; // its worker was replaced
    if (!router) {
      router = worker.worker.createRouter({ mediaCodecs: ROUTER_CODECS, appData: { probe: true } });
      this.#routers.set(worker.index, router);
      router.catch(() => this.#routers.delete(worker.index));
    }
    const r = await router;
    const relays = this.o.turn ? await this.o.turn.forSession(sessionId) : { iceServers: [], iceServersExpireAt: null };
    const ids: string[] = [];
    this.#bySession.set(sessionId, ids);
    const probes = await Promise.all(
      PROBE_KINDS.map(async (kind): Promise<Probe> => {
        const transport = await r.createWebRtcTransport({
          webRtcServer: worker.webRtcServer,
          // the relay's probe reaches the server however the relay does; the others only the way they test
          enableUdp: kind !== 'tcp',
          enableTcp: kind !== 'udp',
          preferUdp: true,
          enableSctp: true,
          appData: { probe: kind, sessionId },
        });
        this.#probes.set(transport.id, { sessionId, transport });
        ids.push(transport.id);
        const timer = setTimeout(() => this.#close(transport.id), PROBE_TTL_MS);
        timer.unref();
        transport.observer.once('close', () => {
          clearTimeout(timer);
          this.#probes.delete(transport.id);
        });
        return { kind, transportId: transport.id, iceParameters: transport.iceParameters, iceCandidates: transport.iceCandidates, dtlsParameters: transport.dtlsParameters, sctpParameters: transport.sctpParameters };
      }),
    );
    return { routerRtpCapabilities: r.rtpCapabilities, probes, iceServers: relays.iceServers, iceServersExpireAt: relays.iceServersExpireAt };
  }

  /** The page's DTLS parameters for one of its session's probes: ICE and DTLS then complete if the path lets them. */
  async connect(sessionId: string, transportId: string, dtlsParameters: DtlsParameters): Promise<void> {
    const p = this.#probes.get(transportId);
    if (!p || p.sessionId !== sessionId) throw new AppError('not_found', { message: 'No such probe for this session (it may have expired; run the check again).' });
    await p.transport.connect({ dtlsParameters }).catch((err: Error) => {
      throw new AppError('validation_failed', { message: `connect: ${err.message}`, details: { fields: [{ field: 'dtlsParameters', in: 'body', code: 'invalid', message: err.message }] } });
    });
  }

  /** Probes open now (tests, status). */
  get open(): number {
    return this.#probes.size;
  }

  close(): void {
    for (const id of [...this.#probes.keys()]) this.#close(id);
    for (const r of this.#routers.values()) void r.then((router) => router.close(), () => {});
    this.#routers.clear();
  }

  #forget(sessionId: string): void {
    for (const id of this.#bySession.get(sessionId) ?? []) this.#close(id);
    this.#bySession.delete(sessionId);
  }

  #close(transportId: string): void {
    const p = this.#probes.get(transportId);
    if (!p) return;
    this.#probes.delete(transportId);
    p.transport.close();
    const ids = this.#bySession.get(p.sessionId);
    if (ids) {
      const rest = ids.filter((i) => i !== transportId);
      if (rest.length) this.#bySession.set(p.sessionId, rest);
      else this.#bySession.delete(p.sessionId);
    }
  }
}
