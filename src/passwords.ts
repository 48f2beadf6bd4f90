import { randomBytes } from 'node:crypto';
import { hash, verify, type Algorithm } from '@node-rs/argon2';

/**
 * Passwords of signed-in owners and admins: argon2id (memory-hard) through @node-rs/argon2, whose
 * prebuilt binaries ship inside its npm packages. RFC 9106's second recommended setting (64 MiB, 3
 * passes), with one lane: about 80 ms per hash on one core of this class of machine. The stored value is
 * the PHC string, which names the algorithm and parameters, so they can be raised later and old hashes
 * still verify.
 */
const PARAMS = {
  algorithm: 2 as Algorithm, // Algorithm.Argon2id (an ambient const enum, which isolatedModules cannot read)
  memoryCost: 64 * 1024,
  timeCost: 3,
  parallelism: 1,
};

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

/** NFKC, so the same password typed through different input methods is the same bytes. */
export const normalizePassword = (password: string): string => password.normalize('NFKC');

/** Length in characters (code points), after normalization. */
export const passwordLength = (password: string): number => [...normalizePassword(password)].length;

export function hashPassword(password: string): Promise<string> {
  return hash(normalizePassword(password), PARAMS);
}

/** Constant-time comparison is the library's; a malformed stored hash verifies nothing. */
export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  try {
    return await verify(phc, normalizePassword(password));
  } catch {
    return false;
  }
}

let dummy: Promise<string> | null = null;

/** Starts computing the dummy hash, so the first unknown-email sign-in does not pay for it. */
export function prepareDummyHash(): void {
  dummy ??= hash(randomBytes(32), PARAMS);
}

/**
 * Spends what a real verification spends, against a hash of a random password, so an unknown email (or
 * organization) answers in the same time as a wrong password. Always false.
 */
export async function verifyDummy(password: string): Promise<false> {
  prepareDummyHash();
  await verifyPassword(await dummy!, password);
  return false;
}
