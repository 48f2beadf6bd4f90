import { randomBytes } from 'node:crypto';
import { fillRandom, randomString } from './crypto.ts';

export type IdPrefix = 'org' | 'key' | 'usr' | 'mtg' | 'cls' | 'enr' | 'job' | 'evt' | 'ses' | 'wr' | 'req' | 'adm' | 'as' | 'whe' | 'whm' | 'whd' | 'ntf' | 'eml' | 'att' | 'pol' | 'qst' | 'chm' | 'rec' | 'nts';

/** Crockford's base32, lowercase: what a ULID is made of. */
const B32 = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_MAX = 2 ** 48 - 1;
const rand = Buffer.alloc(16);
/** The 16 random characters of the last ULID, as digits 0..31, and the time it was made for. */
const lastRandom = new Uint8Array(16);
let lastTime = 0;
let lastTimeText = '';
let lastRandomText = '';

/**
 * A monotonic ULID in lowercase, like the `ulid` package's `monotonicFactory()` (which this replaces:
 * it drew one byte from the CSPRNG per character): 10 characters of time, 16 of randomness, and
 * within one millisecond, or for a time not after the last one, the last id's random part plus one
 * with the last id's time, so ids made by this process always sort in the order they were made.
 */
export function ulid(at?: number): string {
  const seed = !at || Number.isNaN(at) ? Date.now() : at;
  if (seed <= lastTime) {
    let i = 15;
    while (i >= 0 && lastRandom[i] === 31) lastRandom[i--] = 0;
    if (i < 0) throw new Error('ulid: the random part overflowed within one millisecond');
    lastRandom[i]!++;
    lastRandomText = lastRandomText.slice(0, i) + encodeRandom(i);
    return lastTimeText + lastRandomText;
  }
  if (!Number.isInteger(seed) || seed < 0 || seed > TIME_MAX) throw new Error(`ulid: cannot encode the time ${seed}`);
  lastTime = seed;
  lastTimeText = encodeTime(seed);
  fillRandom(rand, 0, 16);
  for (let i = 0; i < 16; i++) lastRandom[i] = rand[i]! & 31; // 256 is a multiple of 32: uniform
  lastRandomText = encodeRandom(0);
  return lastTimeText + lastRandomText;
}

function encodeRandom(from: number): string {
  let s = '';
  for (let i = from; i < 16; i++) s += B32[lastRandom[i]!];
  return s;
}

function encodeTime(t: number): string {
  let s = '';
  for (let i = 0; i < 10; i++) {
    const mod = t % 32;
    s = B32[mod] + s;
    t = (t - mod) / 32;
  }
  return s;
}

const B32_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 32; i++) B32_VALUE[B32.charCodeAt(i)] = i;

/**
 * Writes the 26-character ULID that starts at `from` in `id` as its 16 bytes (128 bits, big-endian) at
 * `offset`; returns false, writing nothing useful, when those 26 characters are not a lowercase ULID.
 */
export function ulidToBytes(id: string, from: number, out: Buffer, offset: number): boolean {
  if (id.length !== from + 26) return false;
  // 26 characters carry 130 bits; the first holds only the top 3 of the 128
  let acc = 0;
  let bits = 0;
  let o = offset;
  for (let i = from; i < from + 26; i++) {
    const c = id.charCodeAt(i);
    const v = c < 128 ? B32_VALUE[c]! : -1;
    if (v < 0 || (i === from && v > 7)) return false;
    acc = ((acc << 5) | v) & 0xffff;
    bits += 5;
    if (i === from) bits -= 2;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >>> bits) & 0xff;
    }
  }
  return true;
}

/** The ULID whose 16 bytes are at `offset` in `buf`, as 26 lowercase characters. */
export function ulidFromBytes(buf: Buffer, offset: number): string {
  let s = '';
  let acc = 0;
  let bits = 2; // two zero bits on top make 130
  for (let i = offset; i < offset + 16; i++) {
    acc = ((acc << 8) | buf[i]!) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      s += B32[(acc >>> bits) & 31];
    }
  }
  return s;
}

/** Service ids: a type prefix and a ULID, so ids sort by creation and say what they name. */
export function newId(prefix: IdPrefix, at?: number): string {
  return `${prefix}_${ulid(at)}`;
}

const SERVICE_ID = /^(org|key|usr|mtg|cls|enr|job|evt|ses|wr|mem|as)_[0-9a-z]{26}$/;
export const isServiceId = (prefix: IdPrefix, v: string): boolean => v.startsWith(`${prefix}_`) && SERVICE_ID.test(v);

/** URL-safe random string with `bytes` bytes of entropy, straight from the CSPRNG: use it for secrets. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** URL-safe random identifier with `bytes` bytes of entropy, from the pooled CSPRNG (see crypto.ts): not for secrets. */
export const randomId = (bytes = 16): string => randomString(bytes, 'base64url');

const SLUG_ALPHABET = 'abcdefghijkmnpqrstuvwxyz';
/** Meeting slugs look like `abc-defg-hjk`: easy to read aloud, 10 letters of entropy (~45 bits). */
export function newSlug(): string {
  const b = randomBytes(10);
  let s = '';
  for (let i = 0; i < 10; i++) {
    s += SLUG_ALPHABET[b[i]! % SLUG_ALPHABET.length];
    if (i === 2 || i === 6) s += '-';
  }
  return s;
}
