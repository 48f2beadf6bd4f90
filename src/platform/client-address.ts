import ipaddr from 'ipaddr.js';

/**
 * Which proxies in front of Aula are trusted to say who the client is (`AULA_TRUST_PROXY`), as
 * Express's "trust proxy" does: a number of hops, or the proxies' networks. The client writes whatever
 * it likes at the left of `X-Forwarded-For`, so the address taken is the first one, reading from the
 * right (the socket's peer, then each proxy's addition), that is not a trusted proxy.
 */
export type TrustProxy = { hops: number } | { networks: [ipaddr.IPv4 | ipaddr.IPv6, number][] } | null;

const normalize = (a: ipaddr.IPv4 | ipaddr.IPv6) => (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a);

/**
 * `false`/`0`: no proxy; `N`: the N nearest hops are proxies; `10.0.0.0/8,fd00::/8,127.0.0.1`: these
 * networks are. Throws with a message that says what is wrong.
 */
export function parseTrustProxy(value: string): TrustProxy {
  const v = value.trim().toLowerCase();
  if (v === '' || v === 'false' || v === 'no' || v === '0') return null;
  if (v === 'true' || v === 'yes')
    throw new Error('takes the number of proxy hops in front of Aula (e.g. 1) or the proxies\' networks (e.g. 10.0.0.0/8); "true" would trust an address the client writes itself');
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops > 10) throw new Error('at most 10 proxy hops');
    return { hops };
  }
  const networks = v.split(',').map((part) => {
    const p = part.trim();
    try {
      if (p.includes('/')) {
        const [addr, bits] = ipaddr.parseCIDR(p);
        return [normalize(addr), addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? bits - 96 : bits] as [ipaddr.IPv4 | ipaddr.IPv6, number];
      }
      const addr = normalize(ipaddr.parse(p));
      return [addr, addr.kind() === 'ipv4' ? 32 : 128] as [ipaddr.IPv4 | ipaddr.IPv6, number];
    } catch {
      throw new Error(`"${p}" is neither a hop count nor an address or network (CIDR)`);
    }
  });
  return { networks };
}

function parse(address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  try {
    return normalize(ipaddr.parse(address.trim()));
  } catch {
    return null;
  }
}

/** A dotted quad without leading zeros is already the address's canonical text (the common case, parsed for nothing otherwise). */
const PLAIN_IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** The canonical text of an address (IPv4-mapped IPv6 as IPv4), or null when it is not one. */
function canonical(address: string): string | null {
  const a = address.trim();
  if (PLAIN_IPV4.test(a)) return a;
  return parse(a)?.toString() ?? null;
}

/** The client's address: `peer` (the socket's) when no proxy is trusted, else what the trusted proxies vouch for. */
export function clientAddress(peer: string, forwardedFor: string | undefined, trust: TrustProxy): string {
  const plain = canonical(peer) ?? peer;
  if (!trust || !forwardedFor) return plain;
  // nearest first: the socket's peer, then X-Forwarded-For from the right
  const chain = [peer, ...forwardedFor.split(',').reverse()];
  let last = plain;
  for (let i = 0; i < chain.length; i++) {
    const text = canonical(chain[i]!);
    if (text === null) return last; // a malformed entry vouches for nothing: the last address a trusted hop gave
    last = text;
    const trusted = 'hops' in trust ? i < trust.hops : isTrustedNetwork(text, trust.networks);
    if (!trusted) return last;
  }
  return last; // every hop a trusted proxy: the farthest one named
}

function isTrustedNetwork(text: string, networks: [ipaddr.IPv4 | ipaddr.IPv6, number][]): boolean {
  const addr = parse(text)!;
  return networks.some(([net, bits]) => addr.kind() === net.kind() && addr.match(net, bits));
}

/** Whether the socket's peer is one of the trusted proxies, whose headers (X-Forwarded-For, X-Request-Id) are believed. */
export function peerIsTrustedProxy(peer: string, trust: TrustProxy): boolean {
  if (!trust) return false;
  if ('hops' in trust) return trust.hops > 0;
  const text = canonical(peer);
  return text !== null && isTrustedNetwork(text, trust.networks);
}
