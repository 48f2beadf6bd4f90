import { createCipheriv, createDecipheriv, createHmac, hash, hkdfSync, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

// One-shot `crypto.hash` is several times cheaper than a Hash object for short inputs (Node 20.12+, which
// package.json's engines require).
export const sha256 = (v: string | Buffer): Buffer => hash('sha256', v, 'buffer');
export const sha256Hex = (v: string | Buffer): string => hash('sha256', v, 'hex');

/**
 * CSPRNG bytes drawn from a 4 KiB pool that `randomFillSync` refills when it runs low: one call into
 * OpenSSL per ~4 KiB instead of one per value, which matters on the hot path (a `randomBytes(12)` costs
 * about 2 µs, a slice of the pool under 0.1). The bytes are the same quality; what is handed out stays
 * in the pool until it is refilled, so long-lived secrets (API keys, server secrets) use `randomBytes`.
 */
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafeSlow(POOL_SIZE);
let poolOffset = POOL_SIZE;

function takePool(n: number): number {
  if (poolOffset + n > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += n;
  return at;
}

/** Writes `n` random bytes into `target` at `offset`. */
export function fillRandom(target: Buffer, offset: number, n: number): void {
  if (n > POOL_SIZE) {
    randomFillSync(target, offset, n);
    return;
  }
  const at = takePool(n);
  pool.copy(target, offset, at, at + n);
}

/** `bytes` random bytes as a string (hex or base64url), for identifiers, not for secrets. */
export function randomString(bytes: number, encoding: 'hex' | 'base64url'): string {
  if (bytes > POOL_SIZE) return randomBytes(bytes).toString(encoding);
  const at = takePool(bytes);
  return pool.toString(encoding, at, at + bytes);
}

export function hmacSha256Hex(key: string | Buffer, data: string | Buffer): string {
  return createHmac('sha256', key).update(data).digest('hex');
}

/** Constant-time equality for strings or buffers of any length. */
export function safeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const ab = typeof a === 'string' ? Buffer.from(a) : a;
  const bb = typeof b === 'string' ? Buffer.from(b) : b;
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/** Derives an independent 256-bit key per purpose from the server secret. */
export function deriveKey(secret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret), Buffer.alloc(0), `aula:${purpose}`, 32));
}

const VERSION = 1;

/**
 * AES-256-GCM sealed box: version byte, 12-byte nonce, ciphertext, 16-byte tag, assembled in one buffer.
 * Used for opaque tokens (integrity and confidentiality in one primitive) and for data at rest.
 * Nonces are random, so one key should seal well under 2^32 boxes, the bound
 * NIST SP 800-38D sets for random 96-bit nonces.
 */
export class Sealer {
  readonly #key: Buffer;
  readonly #aad: Buffer;
  constructor(key: Buffer, aad: string) {
    if (key.length !== 32) throw new Error('Sealer needs a 32-byte key');
    this.#key = key;
    this.#aad = Buffer.from(aad);
  }

  /** Seals bytes, or a string as UTF-8. The nonce is 96 random bits from the pool. */
  seal(plain: Buffer | string): Buffer {
    const at = takePool(12);
    const iv = pool.subarray(at, at + 12);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    c.setAAD(this.#aad);
    let body = typeof plain === 'string' ? c.update(plain, 'utf8') : c.update(plain);
    const tail = c.final(); // empty for GCM, a stream mode: final() computes the tag
    if (tail.length) body = Buffer.concat([body, tail]);
    const out = Buffer.allocUnsafe(1 + 12 + body.length + 16);
    out[0] = VERSION;
    iv.copy(out, 1);
    body.copy(out, 13);
    c.getAuthTag().copy(out, 13 + body.length);
    return out;
  }

  /** A box's nonce as base64url: random and unique per seal, so it can name what was sealed. */
  static nonceOf(box: Buffer): string {
    return box.toString('base64url', 1, 13);
  }

  /** Returns null for anything that was not sealed by this key and purpose. */
  open(box: Buffer): Buffer | null {
    if (box.length < 1 + 12 + 16 || box[0] !== VERSION) return null;
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, box.subarray(1, 13));
      d.setAAD(this.#aad);
      d.setAuthTag(box.subarray(box.length - 16));
      const plain = d.update(box.subarray(13, box.length - 16));
      const tail = d.final(); // throws unless the tag verifies; empty for GCM
      return tail.length ? Buffer.concat([plain, tail]) : plain;
    } catch {
      return null;
    }
  }

  sealJson(value: unknown): Buffer {
    return this.seal(JSON.stringify(value));
  }

  openJson<T>(box: Buffer): T | null {
    const plain = this.open(box);
    if (!plain) return null;
    try {
      return JSON.parse(plain.toString('utf8')) as T;
    } catch {
      return null;
    }
  }
}

/**
 * Opens the AES-256-CTR + HMAC-SHA256 boxes (encrypt-then-MAC; version 2, IV 16, ciphertext, tag 16)
 * that sealed join tokens from 2026-11-22 to 2026-11-24, so links handed out then keep working until
 * they expire (a join token lives at most 24 hours): this class can go after 2026-11-26. Opening
 * verifies the tag in constant time before decrypting, with Node's own HMAC and AES-CTR.
 */
export class StreamBoxOpener {
  static readonly VERSION = 2;
  readonly #encKey: Buffer;
  readonly #macKey: Buffer;

  constructor(key: Buffer, purpose: string) {
    this.#encKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `aula:${purpose}:ctr`, 32));
    this.#macKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `aula:${purpose}:hmac`, 32));
  }

  /** The plaintext and the box's IV (as base64url), or null unless sealed by this key and purpose. */
  open(box: Buffer): { plain: Buffer; iv: string } | null {
    if (box.length < 1 + 16 + 16 || box[0] !== StreamBoxOpener.VERSION) return null;
    const end = box.length - 16;
    const tag = createHmac('sha256', this.#macKey).update(box.subarray(0, end)).digest().subarray(0, 16);
    if (!timingSafeEqual(tag, box.subarray(end))) return null;
    const iv = box.subarray(1, 17);
    const plain = createDecipheriv('aes-256-ctr', this.#encKey, iv).update(box.subarray(17, end));
    return { plain, iv: iv.toString('base64url') };
  }
}
