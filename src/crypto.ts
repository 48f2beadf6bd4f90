import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

export const sha256 = (v: string | Buffer): Buffer => createHash('sha256').update(v).digest();

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
 * AES-256-GCM sealed box: version byte, 12-byte nonce, ciphertext, 16-byte tag.
 * Used for opaque tokens (integrity and confidentiality in one primitive) and for data at rest.
 */
export class Sealer {
  readonly #key: Buffer;
  readonly #aad: Buffer;
  constructor(key: Buffer, aad: string) {
    if (key.length !== 32) throw new Error('Sealer needs a 32-byte key');
    this.#key = key;
    this.#aad = Buffer.from(aad);
  }

  seal(plain: Buffer): Buffer {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.#key, iv);
    c.setAAD(this.#aad);
    const body = Buffer.concat([c.update(plain), c.final()]);
    return Buffer.concat([Buffer.of(VERSION), iv, body, c.getAuthTag()]);
  }

  /** Returns null for anything that was not sealed by this key and purpose. */
  open(box: Buffer): Buffer | null {
    if (box.length < 1 + 12 + 16 || box[0] !== VERSION) return null;
    try {
      const d = createDecipheriv('aes-256-gcm', this.#key, box.subarray(1, 13));
      d.setAAD(this.#aad);
      d.setAuthTag(box.subarray(box.length - 16));
      return Buffer.concat([d.update(box.subarray(13, box.length - 16)), d.final()]);
    } catch {
      return null;
    }
  }

  sealJson(value: unknown): Buffer {
    return this.seal(Buffer.from(JSON.stringify(value)));
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
