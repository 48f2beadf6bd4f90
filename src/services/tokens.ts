import { deriveKey, Sealer, StreamBoxOpener } from '../platform/crypto.ts';
import { ulidFromBytes, ulidToBytes } from '../platform/ids.ts';

import { ROOM_ROLES, type RoomRole } from '../core/room-access.ts';


/** What a join token carries; sealed, so it is opaque, unforgeable and needs no storage to mint. */
export interface JoinClaims {
  /** token id: the sealed box's random nonce; a single-use token is spent by recording it */
  j: string;
  o: string;
  m: string;
  u: string;
  r: RoomRole;
  n: string | null;
  /** issued at, expires at (ms) */
  i: number;
  e: number;
  s: boolean;
  d: string | null;
}

/** Meeting-session access token: valid only on its meeting's routes. */
export interface AccessClaims {
  s: string;
  o: string;
  m: string;
  g: string;
  u: string;
  e: number;
}

/** Media room token, presented to the media gateway. */
export interface MediaClaims {
  s: string;
  m: string;
  u: string;
  r: RoomRole;
  e: number;
}

/** How a token kind turns its claims into the bytes it seals, and back. */
interface ClaimsCodec<C, I> {
  encode(claims: I): Buffer | string;
  /** `id` is the sealed box's random nonce or IV, unique per token, as base64url. */
  decode(plain: Buffer, id: string): C | null;
}

const jsonCodec = <C>(): ClaimsCodec<C, C> => ({
  encode: (claims) => JSON.stringify(claims),
  decode: (plain) => parseJson<C>(plain),
});

function parseJson<C>(plain: Buffer): C | null {
  try {
    return JSON.parse(plain.toString('utf8')) as C;
  } catch {
    return null;
  }
}

/**
 * Join tokens travel in URLs (three times in a mint's response), so their claims are packed in binary:
 * 63 bytes sealed into a 126-character token, where JSON made 290. The token id is the box's nonce:
 * random, 96 bits, unique per seal, and covered by the tag.
 *
 *   0      format (2)
 *   1..49  org, meeting, user: each ULID as 16 bytes
 *   49     role (index in ROOM_ROLES)
 *   50     flags: 1 single-use, 2 display name follows, 4 redirect URL follows
 *   51..63 issued at, expires at: milliseconds as 48-bit unsigned integers
 *   then   display name, redirect URL when flagged: 16-bit length and UTF-8
 */
const JOIN_FORMAT = 2;
const JOIN_FIXED = 63;

const joinCodec: ClaimsCodec<JoinClaims, Omit<JoinClaims, 'j'>> = {
  encode(c) {
    const size = JOIN_FIXED + (c.n === null ? 0 : 2 + Buffer.byteLength(c.n)) + (c.d === null ? 0 : 2 + Buffer.byteLength(c.d));
    const b = Buffer.allocUnsafe(size);
    b[0] = JOIN_FORMAT;
    if (!ulidToBytes(c.o, 4, b, 1) || !ulidToBytes(c.m, 4, b, 17) || !ulidToBytes(c.u, 4, b, 33)) {
      throw new Error('join claims need service ids (org_, mtg_, usr_ and a ULID)');
    }
    b[49] = ROOM_ROLES.indexOf(c.r);
    b[50] = (c.s ? 1 : 0) | (c.n === null ? 0 : 2) | (c.d === null ? 0 : 4);
    b.writeUIntBE(c.i, 51, 6);
    b.writeUIntBE(c.e, 57, 6);
    let at = JOIN_FIXED;
    for (const text of [c.n, c.d]) {
      if (text === null) continue;
      const len = b.write(text, at + 2, 'utf8');
      b.writeUInt16BE(len, at);
      at += 2 + len;
    }
    return b.subarray(0, at);
  },
  decode(p, id) {
    if (p.length < JOIN_FIXED || p[0] !== JOIN_FORMAT || p[49]! >= ROOM_ROLES.length) return null;
    const flags = p[50]!;
    let at = JOIN_FIXED;
    const text = (present: boolean): string | null => {
      if (!present) return null;
      const len = p.readUInt16BE(at);
      const v = p.toString('utf8', at + 2, at + 2 + len);
      at += 2 + len;
      return v;
    };
    const n = text((flags & 2) !== 0);
    const d = text((flags & 4) !== 0);
    return {
      j: id,
      o: `org_${ulidFromBytes(p, 1)}`,
      m: `mtg_${ulidFromBytes(p, 17)}`,
      u: `usr_${ulidFromBytes(p, 33)}`,
      r: ROOM_ROLES[p[49]!]!,
      n,
      i: p.readUIntBE(51, 6),
      e: p.readUIntBE(57, 6),
      s: (flags & 1) !== 0,
      d,
    };
  },
};

/** How a token kind seals its claims' bytes into text and opens them again. */
interface TokenBox {
  seal(plain: Buffer | string): string;
  /** The plaintext and the box's id (its random nonce or IV, unique per seal), or null. */
  open(box: Buffer): { plain: Buffer; id: string } | null;
}

/** AES-256-GCM boxes (`Sealer`): every token kind. */
function gcmBox(sealer: Sealer): TokenBox {
  return {
    seal: (plain) => sealer.seal(plain).toString('base64url'),
    open: (box) => {
      const plain = sealer.open(box);
      return plain && { plain, id: Sealer.nonceOf(box) };
    },
  };
}

/** Join tokens: GCM boxes; the AES-CTR + HMAC boxes of join tokens minted before 2026-11-24 still open until they expire. */
function joinBox(key: Buffer, purpose: string): TokenBox {
  const gcm = gcmBox(new Sealer(key, purpose));
  const stream = new StreamBoxOpener(key, purpose);
  return {
    seal: gcm.seal,
    open: (box) => {
      if (box[0] !== StreamBoxOpener.VERSION) return gcm.open(box);
      const opened = stream.open(box);
      return opened && { plain: opened.plain, id: opened.iv };
    },
  };
}

class TokenKind<C, I = C> {
  readonly #box: TokenBox;
  readonly #prefix: string;
  readonly #codec: ClaimsCodec<C, I>;
  constructor(box: TokenBox, prefix: string, codec: ClaimsCodec<C, I>) {
    this.#box = box;
    this.#prefix = prefix;
    this.#codec = codec;
  }
  issue(claims: I): string {
    return this.#prefix + this.#box.seal(this.#codec.encode(claims));
  }
  read(token: string): C | null {
    if (!token.startsWith(this.#prefix) || token.length > 4096) return null;
    const opened = this.#box.open(Buffer.from(token.slice(this.#prefix.length), 'base64url'));
    if (!opened) return null;
    try {
      return this.#codec.decode(opened.plain, opened.id);
    } catch {
      return null; // sealed by us, so well formed; this is only a guard
    }
  }
}

export class Tokens {
  readonly join: TokenKind<JoinClaims, Omit<JoinClaims, 'j'>>;
  readonly access: TokenKind<AccessClaims>;
  readonly media: TokenKind<MediaClaims>;
  /** Encrypts stored idempotent responses, which can hold join tokens. */
  readonly data: Sealer;

  constructor(secret: string) {
    const gcm = (purpose: string) => gcmBox(new Sealer(deriveKey(secret, purpose), purpose));
    this.join = new TokenKind(joinBox(deriveKey(secret, 'join-token'), 'join-token'), 'jt_', joinCodec);
    this.access = new TokenKind(gcm('session-access'), 'sat_', jsonCodec<AccessClaims>());
    this.media = new TokenKind(gcm('media-room'), 'mrt_', jsonCodec<MediaClaims>());
    this.data = new Sealer(deriveKey(secret, 'data-at-rest'), 'data-at-rest');
  }
}
