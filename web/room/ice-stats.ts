/**
 * The path a transport uses, read from its stats report (RTCStatsReport: the `transport` entry names the
 * selected candidate pair, the pair names its local candidate). One reading for the page (media.ts) and
 * the tests' Node peers.
 */

export interface SelectedPath {
  /** The local candidate's type: `host`, `srflx`, `prflx` or `relay`. */
  candidateType: string;
  protocol: string;
  /** For a relay: how the browser reaches it (`udp`, `tcp`, `tls`), and its URL. */
  relayProtocol: string | null;
  url: string | null;
  /** The pair's current round trip, in ms (null until measured). */
  rttMs: number | null;
}

export function selectedPath(stats: { forEach(fn: (s: any) => void): void; get(id: string): any }): SelectedPath | null {
  let path: SelectedPath | null = null;
  stats.forEach((s) => {
    if (s.type !== 'transport' || !s.selectedCandidatePairId) return;
    const pair = stats.get(s.selectedCandidatePairId);
    const local = pair && stats.get(pair.localCandidateId);
    if (!local) return;
    path = {
      candidateType: local.candidateType,
      protocol: local.protocol,
      relayProtocol: local.relayProtocol ?? null,
      url: local.url ?? null,
      rttMs: typeof pair.currentRoundTripTime === 'number' ? Math.round(pair.currentRoundTripTime * 1000) : null,
    };
  });
  return path;
}
