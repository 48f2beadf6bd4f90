import { Device } from 'mediasoup-client';
import type { RtpCapabilities } from 'mediasoup-client/lib/RtpParameters.js';
import type { SctpParameters } from 'mediasoup-client/lib/SctpParameters.js';
import type { DtlsParameters, IceCandidate, IceParameters, Transport } from 'mediasoup-client/lib/Transport.js';
import type { IceServer } from '../../src/core/room-protocol.ts';
import { networkCheck, probeConnect, type Session } from './api.ts';

/**
 * The pre-join network check (docs/networks.md): one throwaway transport per path to the media server,
 * UDP only, TCP only, and through the relays, each connected with a data channel (ICE and DTLS, as a
 * real join needs; no media). A path is `ok` once its transport connects, `blocked` when it has not
 * within PATH_CHECK_MS, `none` when there is no relay to try.
 */

export const PATH_CHECK_MS = 8000;
export type PathKind = 'udp' | 'tcp' | 'relay';
export type PathResult = 'checking' | 'ok' | 'blocked' | 'none';
export type PathResults = Record<PathKind, PathResult>;

interface Probe {
  kind: PathKind;
  transportId: string;
  iceParameters: unknown;
  iceCandidates: unknown[];
  dtlsParameters: unknown;
  sctpParameters: unknown;
}

/** What the check means for a person, in a sentence. */
export function pathSummary(r: PathResults): { level: 'ok' | 'warn' | 'error' | 'checking'; text: string } {
  if (r.udp === 'ok') return { level: 'ok', text: 'Your network lets the class\'s audio and video through.' };
  if (r.tcp === 'ok' || r.relay === 'ok') return { level: 'warn', text: 'Your network blocks the fastest path; the class will come through another one, with a little more delay.' };
  if (r.udp === 'checking' || r.tcp === 'checking' || r.relay === 'checking') return { level: 'checking', text: 'Checking your network…' };
  const ask = r.relay === 'none' ? "to allow this class's media server" : "to allow TCP port 443 to this class's relay";
  return { level: 'error', text: `Your network is blocking the class's audio and video. Try another network (a phone's hotspot works), or ask your school's IT ${ask}.` };
}

/** Runs the check; `update` hears each path's result as it comes. Resolves when every path has one. */
export async function checkPaths(session: Session, update: (r: PathResults) => void): Promise<PathResults> {
  const results: PathResults = { udp: 'checking', tcp: 'checking', relay: 'checking' };
  const set = (kind: PathKind, r: PathResult) => {
    if (results[kind] !== 'checking') return;
    results[kind] = r;
    update({ ...results });
  };
  update({ ...results });
  let answer: { routerRtpCapabilities: unknown; probes: Probe[]; iceServers: IceServer[] };
  try {
    answer = await networkCheck(session);
  } catch {
    // the check itself could not run (an older server, a node without media): say nothing rather than something wrong
    for (const k of ['udp', 'tcp', 'relay'] as const) set(k, 'none');
    return results;
  }
  const device = new Device();
  await device.load({ routerRtpCapabilities: answer.routerRtpCapabilities as RtpCapabilities });
  const transports: Transport[] = [];
  await Promise.all(
    answer.probes.map(async (p) => {
      const relay = p.kind === 'relay';
      if (relay && answer.iceServers.length === 0) return set('relay', 'none');
      const transport = device.createSendTransport({
        id: p.transportId,
        iceParameters: p.iceParameters as IceParameters,
        iceCandidates: p.iceCandidates as IceCandidate[],
        dtlsParameters: p.dtlsParameters as DtlsParameters,
        sctpParameters: p.sctpParameters as SctpParameters,
        iceServers: relay ? answer.iceServers : [],
        iceTransportPolicy: relay ? 'relay' : 'all',
      });
      transports.push(transport);
      transport.on('connect', ({ dtlsParameters }, ok, fail) => {
        probeConnect(session, p.transportId, dtlsParameters).then(ok, fail);
      });
      // no data producer on the server: the probe only needs ICE and DTLS to complete
      transport.on('producedata', (_params, ok) => ok({ id: `probe-${p.kind}` }));
      const connected = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), PATH_CHECK_MS);
        transport.on('connectionstatechange', (state) => {
          if (state === 'connected') {
            clearTimeout(timer);
            resolve(true);
          } else if (state === 'failed') {
            clearTimeout(timer);
            resolve(false);
          }
        });
      });
      void transport.produceData({ ordered: true, label: 'probe' }).catch(() => {});
      set(p.kind, (await connected) ? 'ok' : 'blocked');
    }),
  );
  for (const t of transports) t.close();
  return results;
}
