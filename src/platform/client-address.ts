import type { IncomingMessage } from 'node:http';
import ipaddr from 'ipaddr.js';
import proxyaddr from 'proxy-addr';

/**
 * Which proxies in front of Aula are trusted to say who the client is (`AULA_TRUST_PROXY`), as
 * Express's "trust proxy" does, with Express's parser (proxy-addr): a number of hops, or the proxies'
 * networks. The client writes whatever it likes at the left of `X-Forwarded-For`, so the address taken
 * is the first one, reading from the right (the socket's peer, then each proxy's addition), that is not
 * a trusted proxy.
 */
export type TrustProxy = {
  /** Whether the `i`-th address from the socket's side (0: the peer) is a trusted proxy's. */
  trusts: (address: string, i: number) => boolean;
} | null;

/**
 * `false`/`0`: no proxy; `N`: the N nearest hops are proxies; `10.0.0.0/8,fd00::/8,127.0.0.1` (or
 * proxy-addr's names `loopback`, `linklocal`, `uniquelocal`): these networks are. Throws with a message
 * that says what is wrong.
 */
export function parseTrustProxy(value: string): TrustProxy {
  const v = value.trim().toLowerCase();
  if (v === '' || v === 'false' || v === 'no' || v === '0') return null;
  if (v === 'true' || v === 'yes')
    throw new Error('takes the number of proxy hops in front of Aula (e.g. 1) or the proxies\' networks (e.g. 10.0.0.0/8); "true" would trust an address the client writes itself');
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops > 10) throw new Error('at most 10 proxy hops');
    return { trusts: (_address, i) => i < hops };
  }
  const networks = v.split(',').map((p) => p.trim());
  for (const p of networks) {
    try {
      proxyaddr.compile(p);
    } catch {
      throw new Error(`"${p}" is neither a hop count nor an address or network (CIDR)`);
    }
  }
  return { trusts: proxyaddr.compile(networks) };
}

/** The canonical text of an address (IPv4-mapped IPv6 as IPv4), or null when it is not one: one client, one key for per-address limits. */
function canonical(address: string): string | null {
  try {
    const a = ipaddr.parse(address.trim());
    return (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a).toString();
  } catch {
    return null;
  }
}

/** The client's address: `peer` (the socket's) when no proxy is trusted, else what the trusted proxies vouch for. */
export function clientAddress(peer: string, forwardedFor: string | undefined, trust: TrustProxy): string {
  const plain = canonical(peer) ?? peer;
  if (!trust || !forwardedFor) return plain;
  // nearest first: the peer, then X-Forwarded-For from the right, up to the first address not a trusted proxy's
  const chain = proxyaddr.all({ socket: { remoteAddress: peer }, headers: { 'x-forwarded-for': forwardedFor } } as unknown as IncomingMessage, trust.trusts);
  let last = plain;
  for (const entry of chain.slice(1)) {
    const text = canonical(entry);
    if (text === null) return last; // a malformed entry vouches for nothing: the last address a trusted hop gave
    last = text;
  }
  return last;
}

/** Whether the socket's peer is one of the trusted proxies, whose headers (X-Forwarded-For, X-Request-Id) are believed. */
export function peerIsTrustedProxy(peer: string, trust: TrustProxy): boolean {
  return trust !== null && trust.trusts(peer, 0);
}
