import { deriveKey, Sealer } from '../crypto.ts';

export type RoomRole = 'HOST' | 'COHOST' | 'PARTICIPANT' | 'VIEWER';

/** What a join token carries; sealed, so it is opaque, unforgeable and needs no storage to mint. */
export interface JoinClaims {
  /** token id: 128 random bits (from the pooled CSPRNG); a single-use token is spent by recording it */
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

class TokenKind<C> {
  readonly #sealer: Sealer;
  readonly #prefix: string;
  constructor(secret: string, purpose: string, prefix: string) {
    this.#sealer = new Sealer(deriveKey(secret, purpose), purpose);
    this.#prefix = prefix;
  }
  issue(claims: C): string {
    return this.#prefix + this.#sealer.sealJson(claims).toString('base64url');
  }
  read(token: string): C | null {
    if (!token.startsWith(this.#prefix) || token.length > 4096) return null;
    return this.#sealer.openJson<C>(Buffer.from(token.slice(this.#prefix.length), 'base64url'));
  }
}

export class Tokens {
  readonly join: TokenKind<JoinClaims>;
  readonly access: TokenKind<AccessClaims>;
  readonly media: TokenKind<MediaClaims>;
  /** Encrypts stored idempotent responses, which can hold join tokens. */
  readonly data: Sealer;

  constructor(secret: string) {
    this.join = new TokenKind(secret, 'join-token', 'jt_');
    this.access = new TokenKind(secret, 'session-access', 'sat_');
    this.media = new TokenKind(secret, 'media-room', 'mrt_');
    this.data = new Sealer(deriveKey(secret, 'data-at-rest'), 'data-at-rest');
  }
}
