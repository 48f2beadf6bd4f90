import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

export type IdPrefix = 'org' | 'key' | 'usr' | 'mtg' | 'cls' | 'enr' | 'job' | 'evt' | 'ses' | 'wr' | 'req';

/** Service ids: a type prefix and a ULID, so ids sort by creation and say what they name. */
export function newId(prefix: IdPrefix, at?: number): string {
  return `${prefix}_${ulid(at).toLowerCase()}`;
}

const SERVICE_ID = /^(org|key|usr|mtg|cls|enr|job|evt|ses|wr)_[0-9a-z]{26}$/;
export const isServiceId = (prefix: IdPrefix, v: string): boolean => v.startsWith(`${prefix}_`) && SERVICE_ID.test(v);

/** URL-safe random string with `bytes` bytes of entropy. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

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
