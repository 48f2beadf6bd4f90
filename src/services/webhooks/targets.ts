/**
 * Webhook target policy (DESIGN.md decision 7: SSRF is checked on the socket, not the string).
 *
 * Two layers use what is here:
 * - on save, `checkTargetUrl` parses the URL, applies the name rules, resolves the name and refuses
 *   it if ANY address it resolves to is forbidden;
 * - on every delivery, the sender applies `checkTargetSyntax` again and connects through
 *   `vettedLookup`, which resolves the name at connect time, classifies every address and hands the
 *   socket only vetted ones, so a name that changes between save and send (DNS rebinding) can never
 *   reach a forbidden address.
 *
 * Only public unicast addresses are allowed. `allowPrivate` (the spec's
 * `WEBHOOKS_ALLOW_PRIVATE_TARGETS`, never honoured in production: see `allowPrivateTargets` in
 * src/config.ts) additionally allows http, loopback, RFC 1918 private, CGNAT and IPv6 unique-local
 * addresses and local names, for a developer's own receiver. Cloud metadata addresses and names,
 * link-local, unspecified, multicast, broadcast and reserved ranges stay refused even then.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface TargetOptions {
  /** Allow http and local receivers (non-production only; the caller decides, see `allowPrivateTargets`). */
  allowPrivate?: boolean;
  /** Name resolution, injectable for tests. Default: `dns.lookup(host, { all: true })`. */
  lookup?: LookupFn;
}

/** Resolves a host name to every address it has, like `dns.promises.lookup(host, { all: true })`. */
export type LookupFn = (hostname: string) => Promise<LookupAddress[]>;

export type EmbeddingKind = 'ipv4Mapped' | 'nat64' | 'nat64Local' | '6to4' | 'teredo' | 'ipv4Translated' | 'ipv4Compatible';

export interface AddressClass {
  allowed: boolean;
  /**
   * The range the address falls in: `unicast` (public), or why it is refused or special:
   * `loopback`, `private`, `carrierGradeNat`, `linkLocal`, `uniqueLocal`, `unspecified`, `multicast`,
   * `broadcast`, `metadata`, `documentation`, `benchmarking`, `ietfProtocol`, `reserved`, ... (the
   * ipaddr.js range names, refined). For an address that embeds an IPv4 address, the embedded
   * address's range when that is not public, else the wrapper's (`6to4`, `teredo`, `nat64Local`, ...).
   */
  range: string;
  /** The address in canonical form. */
  address: string;
  /** Set when the address is an IPv6 wrapper around an IPv4 address. */
  embedded?: { via: EmbeddingKind; address: string };
}

/** Cloud instance metadata endpoints: refused even with allowPrivate. */
const METADATA_ADDRESSES = new Set([
  '169.254.169.254', // AWS, GCP, Azure, OCI, DigitalOcean, OpenStack
  '169.254.170.2', // AWS ECS task metadata and credentials
  '169.254.170.23', // AWS EKS Pod Identity
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud (legacy)
  'fd00:ec2::254', // AWS IMDS over IPv6
  'fd00:ec2::23', // AWS EKS Pod Identity over IPv6
  'fd20:ce::254', // GCP metadata over IPv6
]);

const METADATA_NAMES = new Set([
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.internal',
]);

/** Name suffixes that only ever mean a local network; refused unless allowPrivate. */
const LOCAL_SUFFIXES = ['.localhost', '.internal', '.local', '.localdomain', '.home.arpa'];

const v4 = (s: string): [ipaddr.IPv4, number] => ipaddr.parseCIDR(s) as [ipaddr.IPv4, number];
/** IPv4 ranges ipaddr.js folds into `reserved`, named more precisely; checked first. */
const V4_REFINED: Array<[string, [ipaddr.IPv4, number]]> = [
  ['ietfProtocol', v4('192.0.0.0/24')],
  ['documentation', v4('192.0.2.0/24')],
  ['documentation', v4('198.51.100.0/24')],
  ['documentation', v4('203.0.113.0/24')],
  ['benchmarking', v4('198.18.0.0/15')],
  ['6to4Relay', v4('192.88.99.0/24')],
];
const V6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number];

/** IPv4 ranges allowPrivate lets through. */
const PRIVATE_V4 = new Set(['loopback', 'private', 'carrierGradeNat']);
/** IPv6 ranges allowPrivate lets through. */
const PRIVATE_V6 = new Set(['loopback', 'uniqueLocal']);

function v4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

function classifyV4(addr: ipaddr.IPv4, allowPrivate: boolean): AddressClass {
  const address = addr.toString();
  if (METADATA_ADDRESSES.has(address)) return { allowed: false, range: 'metadata', address };
  for (const [name, cidr] of V4_REFINED) if (addr.match(cidr)) return { allowed: false, range: name, address };
  const range = addr.range();
  if (range === 'unicast') return { allowed: true, range, address };
  return { allowed: allowPrivate && PRIVATE_V4.has(range), range, address };
}

/** An IPv6 wrapper that is always refused, named after the embedded IPv4 address when that is not public. */
function refusedWrapper(address: string, via: EmbeddingKind, inner: ipaddr.IPv4): AddressClass {
  const c = classifyV4(inner, false);
  return { allowed: false, range: c.range === 'unicast' ? via : c.range, address, embedded: { via, address: c.address } };
}

function classifyV6(addr: ipaddr.IPv6, allowPrivate: boolean): AddressClass {
  const p = addr.parts;
  const address = addr.toString();
  if (METADATA_ADDRESSES.has(address)) return { allowed: false, range: 'metadata', address };
  const range = addr.range();
  const last32 = (): ipaddr.IPv4 => v4FromParts(p[6]!, p[7]!);
  switch (range) {
    case 'ipv4Mapped': {
      // ::ffff:a.b.c.d is the IPv4 address itself on a dual-stack socket.
      const c = classifyV4(addr.toIPv4Address(), allowPrivate);
      return { ...c, address, embedded: { via: 'ipv4Mapped', address: c.address } };
    }
    case 'rfc6052': {
      if (addr.match(NAT64_WELL_KNOWN)) {
        // 64:ff9b::/96 reaches the embedded IPv4 address through a NAT64 gateway: judged as that address
        // (an IPv6-only deployment with DNS64 reaches every IPv4-only receiver this way).
        const c = classifyV4(last32(), allowPrivate);
        return { ...c, address, embedded: { via: 'nat64', address: c.address } };
      }
      // 64:ff9b:1::/48 (RFC 8215) is for local translators whose embedding and reach we cannot know.
      return refusedWrapper(address, 'nat64Local', last32());
    }
    case 'rfc6145':
      return refusedWrapper(address, 'ipv4Translated', last32());
    case '6to4':
      return refusedWrapper(address, '6to4', v4FromParts(p[1]!, p[2]!));
    case 'teredo': {
      // 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC, the client address inverted; report whichever is not public.
      const server = v4FromParts(p[2]!, p[3]!);
      const client = v4FromParts(~p[6]! & 0xffff, ~p[7]! & 0xffff);
      const s = classifyV4(server, false);
      return refusedWrapper(address, 'teredo', s.range === 'unicast' ? client : server);
    }
    case 'unicast': {
      if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0) {
        // ::a.b.c.d, deprecated IPv4-compatible addresses (:: and ::1 were matched above).
        return refusedWrapper(address, 'ipv4Compatible', last32());
      }
      if (!addr.match(V6_GLOBAL_UNICAST)) return { allowed: false, range: 'reserved', address };
      return { allowed: true, range, address };
    }
    default:
      return { allowed: allowPrivate && PRIVATE_V6.has(range), range, address };
  }
}

/**
 * Classifies one IP address (IPv4 in any inet_aton spelling, or IPv6, with or without brackets or a
 * zone). Only public unicast addresses are allowed, plus the local ranges when `allowPrivate`.
 * IPv6 addresses that embed an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo, IPv4-compatible,
 * IPv4-translated) are unwrapped: IPv4-mapped and well-known NAT64 are judged as the embedded
 * address; the others are always refused.
 */
export function classifyAddress(ip: string, opts: { allowPrivate?: boolean } = {}): AddressClass {
  const allowPrivate = opts.allowPrivate === true;
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (!ipaddr.isValid(text)) return { allowed: false, range: 'invalid', address: ip };
  const addr = ipaddr.parse(text);
  return addr.kind() === 'ipv4' ? classifyV4(addr as ipaddr.IPv4, allowPrivate) : classifyV6(addr as ipaddr.IPv6, allowPrivate);
}

/** A lowercase host name without trailing dots. */
function normalizeName(host: string): string {
  return host.toLowerCase().replace(/\.+$/, '');
}

/**
 * The name rules, before any resolution: metadata names always refused; local names
 * (`localhost`, `*.localhost`, `*.internal`, `*.local`, `*.localdomain`, `*.home.arpa`) and
 * single-label names refused unless allowPrivate. Returns the refusing range, or null.
 */
export function forbiddenName(host: string, opts: { allowPrivate?: boolean } = {}): string | null {
  const name = normalizeName(host);
  if (name === '') return 'invalid';
  if (METADATA_NAMES.has(name)) return 'metadata';
  if (opts.allowPrivate) return null;
  if (name === 'localhost' || name.endsWith('.localhost')) return 'loopback';
  if (LOCAL_SUFFIXES.some((s) => name.endsWith(s))) return 'localName';
  if (!name.includes('.')) return 'singleLabel';
  return null;
}

export type TargetRefusal =
  | 'invalid_url' // not a URL
  | 'scheme' // not https (or http with allowPrivate)
  | 'userinfo' // user or password in the URL
  | 'forbidden_name' // a local or metadata name
  | 'forbidden_address' // an IP literal, or a resolved address, that is not allowed
  | 'dns'; // the name did not resolve

export type TargetSyntax =
  | { ok: true; url: URL; host: string; literal: AddressClass | null }
  | { ok: false; reason: TargetRefusal; message: string; range?: string; address?: string };

export type TargetCheck =
  | { ok: true; url: URL; addresses: AddressClass[] }
  | { ok: false; reason: TargetRefusal; message: string; range?: string; address?: string };

/**
 * Everything that can be checked without DNS: scheme, userinfo, name rules, IP literals. The WHATWG
 * URL parser has already normalised every IPv4 spelling (decimal `2130706433`, octal `0177.0.0.1`,
 * hex `0x7f.1`, short `127.1`, percent-encoded, full-width digits) to dotted decimal and IPv6 to its
 * compressed form, so what is classified here is what the socket would be given.
 */
export function checkTargetSyntax(input: string | URL, opts: { allowPrivate?: boolean } = {}): TargetSyntax {
  const allowPrivate = opts.allowPrivate === true;
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { ok: false, reason: 'invalid_url', message: 'not a valid absolute URL' };
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    return { ok: false, reason: 'scheme', message: allowPrivate ? 'the URL must be http:// or https://' : 'the URL must be https://' };
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, reason: 'userinfo', message: 'the URL must not carry a user name or password' };
  }
  const bare = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(bare)) {
    const c = classifyAddress(bare, { allowPrivate });
    if (!c.allowed) {
      return { ok: false, reason: 'forbidden_address', range: c.range, address: c.address, message: `the address ${c.address} is not allowed (${c.range})` };
    }
    return { ok: true, url, host: bare, literal: c };
  }
  const range = forbiddenName(bare, { allowPrivate });
  if (range) return { ok: false, reason: 'forbidden_name', range, message: `the host ${bare} is not allowed (${range})` };
  return { ok: true, url, host: bare, literal: null };
}

export const defaultLookup: LookupFn = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

/** Raised when a target is refused at connect time; `code` is `ERR_AULA_SSRF`. */
export class TargetRefusedError extends Error {
  override name = 'TargetRefusedError';
  readonly code = 'ERR_AULA_SSRF';
  readonly range: string;
  readonly address: string | undefined;
  constructor(message: string, range: string, address?: string) {
    super(message);
    this.range = range;
    this.address = address;
  }
}

/**
 * Resolves a name and classifies every address; rejects with `TargetRefusedError` if any is refused
 * (a name that resolves to both a public and a private address is refused), with the resolver's
 * error (`ENOTFOUND`, ...) if it does not resolve, or with an `ENOTFOUND` error if it resolves to nothing.
 */
export async function resolveVetted(hostname: string, opts: TargetOptions = {}): Promise<AddressClass[]> {
  const name = normalizeName(hostname);
  const range = forbiddenName(name, opts);
  if (range) throw new TargetRefusedError(`the host ${name} is not allowed (${range})`, range);
  const found = await (opts.lookup ?? defaultLookup)(name);
  if (found.length === 0) throw Object.assign(new Error(`${name} has no addresses`), { code: 'ENOTFOUND', hostname: name });
  const classes = found.map((a) => classifyAddress(a.address, opts));
  const bad = classes.find((c) => !c.allowed);
  if (bad) throw new TargetRefusedError(`${name} resolves to ${bad.address}, which is not allowed (${bad.range})`, bad.range, bad.address);
  return classes;
}

/**
 * A `lookup` for `net.connect` / `tls.connect` (and so for an undici connector) that resolves the
 * name itself, classifies every address and returns only vetted ones: the socket connects to exactly
 * what was checked, whatever the name resolves to a moment later. Honours `all` (used by Node's
 * Happy Eyeballs, on by default) and `family`.
 */
export function vettedLookup(opts: TargetOptions = {}) {
  return (
    hostname: string,
    options: { family?: number | string | undefined; all?: boolean | undefined },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    resolveVetted(hostname, opts).then(
      (classes) => {
        const want = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
        const list: LookupAddress[] = classes
          .map((c) => ({ address: c.address, family: isIP(c.address) }))
          .filter((a) => want === 0 || a.family === want);
        if (list.length === 0) {
          callback(Object.assign(new Error(`${hostname} has no IPv${want} address`), { code: 'ENOTFOUND' }), options.all ? [] : '');
        } else if (options.all) {
          callback(null, list);
        } else {
          callback(null, list[0]!.address, list[0]!.family);
        }
      },
      (err: NodeJS.ErrnoException) => callback(err, options.all ? [] : ''),
    );
  };
}

/**
 * The save-time check: syntax and name rules, then resolution of a name (refused if ANY address is
 * forbidden). The result is advisory for later deliveries, which check again on the socket.
 */
export async function checkTargetUrl(input: string | URL, opts: TargetOptions & { dnsTimeoutMs?: number } = {}): Promise<TargetCheck> {
  const syntax = checkTargetSyntax(input, opts);
  if (!syntax.ok) return syntax;
  if (syntax.literal) return { ok: true, url: syntax.url, addresses: [syntax.literal] };
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('DNS lookup timed out'), { code: 'ETIMEOUT' })), opts.dnsTimeoutMs ?? 5000);
    });
    const addresses = await Promise.race([resolveVetted(syntax.host, opts), timeout]);
    return { ok: true, url: syntax.url, addresses };
  } catch (err) {
    if (err instanceof TargetRefusedError) {
      return { ok: false, reason: 'forbidden_address', range: err.range, ...(err.address ? { address: err.address } : {}), message: err.message };
    }
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { ok: false, reason: 'dns', message: `the host ${syntax.host} did not resolve (${code})` };
  } finally {
    clearTimeout(timer);
  }
}
