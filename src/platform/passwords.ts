import { randomBytes } from 'node:crypto';
import { hash, verify, type Algorithm } from '@node-rs/argon2';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as en from '@zxcvbn-ts/language-en';

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

/** zxcvbn's score (0 to 4) a password needs: 3 is "safely unguessable" against an offline attack with a slow hash. */
export const MIN_PASSWORD_SCORE = 3;

let estimator: ZxcvbnFactory | null = null;

/**
 * Why a password may not be used, or null when it may: its length, then its strength as zxcvbn-ts
 * estimates it against its dictionaries of common and breached passwords, English words and names,
 * keyboard patterns, dates and repeats, and against `related` (the email, the organization's name),
 * which must not make up a password. The reason is said so that a person can fix it.
 */
export function passwordProblem(password: string, related: string[] = []): string | null {
  const length = passwordLength(password);
  if (length < MIN_PASSWORD_LENGTH) return `the password must be at least ${MIN_PASSWORD_LENGTH} characters (it has ${length})`;
  if (length > MAX_PASSWORD_LENGTH) return `the password must be at most ${MAX_PASSWORD_LENGTH} characters`;
  estimator ??= new ZxcvbnFactory({ translations: en.translations, graphs: common.adjacencyGraphs, dictionary: { ...common.dictionary, ...en.dictionary } });
  const words = related.flatMap((r) => [r, ...r.split(/[^\p{L}\p{N}]+/u)]).filter((w) => w.length >= 3);
  const result = estimator.check(normalizePassword(password), words);
  if (result.score >= MIN_PASSWORD_SCORE) return null;
  const why = result.feedback.warning ?? 'It would be guessed quickly.';
  const fix = result.feedback.suggestions[0] ?? 'Use a few uncommon words, or a password manager\'s random password.';
  return `the password is too easy to guess: ${why} ${fix}`;
}

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
