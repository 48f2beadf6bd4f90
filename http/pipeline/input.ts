import { isUtf8 } from 'node:buffer';
import type { z } from 'zod';
import { AppError, validationError } from '../../src/core/errors.ts';

/** The path parameters as sent, percent-decoded; one that does not decode, or holds NUL, is refused. */
export function decodeParams(paramNames: string[], rawParams: string[]): Record<string, string> {
  const params: Record<string, string> = {};
  for (let i = 0; i < paramNames.length; i++) {
    try {
      params[paramNames[i]!] = rawParams[i]!.includes('%') ? decodeURIComponent(rawParams[i]!) : rawParams[i]!;
    } catch {
      throw new AppError('bad_request', { message: `Path parameter ${paramNames[i]} is not valid percent-encoding.` });
    }
    if (params[paramNames[i]!]!.includes('\u0000')) {
      throw new AppError('validation_failed', { details: { fields: [{ field: paramNames[i], in: 'path', code: 'invalid_string', message: 'must not contain the NUL character' }] } });
    }
  }
  return params;
}

export function parseJson(body: Buffer | string, contentType: string | undefined): unknown {
  if (body.length === 0) return undefined;
  if (contentType !== 'application/json') {
    const mediaType = contentType?.split(';')[0]?.trim().toLowerCase();
    if (mediaType !== 'application/json' && !mediaType?.endsWith('+json')) {
      throw new AppError('unsupported_media_type', { details: { contentType: contentType ?? null } });
    }
  }
  // toString would replace bytes that are not UTF-8 with U+FFFD: refused instead of stored changed
  if (typeof body !== 'string' && !isUtf8(body)) throw new AppError('invalid_json', { details: { reason: 'The body is not UTF-8.' } });
  const text = typeof body === 'string' ? body : body.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new AppError('invalid_json', { details: { reason: (err as Error).message } });
  }
  if (mayNestDeeperThan(text, MAX_JSON_DEPTH)) {
    const at = tooDeep(value, MAX_JSON_DEPTH);
    if (at !== null) {
      throw new AppError('validation_failed', { details: { fields: [{ field: at || '(root)', in: 'body', code: 'too_deep', message: `must not nest more than ${MAX_JSON_DEPTH} levels of objects and arrays` }] } });
    }
  }
  // In valid UTF-8, JSON text can carry U+0000 and lone surrogates only as escapes (\u0000, \ud800), so
  // without such a sequence there is nothing to look for.
  const bad = ESCAPES_TO_CHECK.test(text) ? findBadString(value) : null;
  if (bad !== null) {
    const message = bad.nul ? 'must not contain the NUL character' : 'must be valid Unicode (a lone UTF-16 surrogate is not)';
    throw new AppError('validation_failed', { details: { fields: [{ field: bad.path || '(root)', in: 'body', code: 'invalid_string', message }] } });
  }
  return value;
}

/** No request body of this API nests deeper; a deeper one would cost a stack to store or answer. */
export const MAX_JSON_DEPTH = 32;

/** Cheap first look: fewer opening brackets than the limit cannot nest past it. */
function mayNestDeeperThan(text: string, limit: number): boolean {
  let opens = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 0x7b || c === 0x5b) && ++opens > limit) return true;
  }
  return false;
}

/** The path of the first value nested deeper than `limit`, or null. Iterative. */
function tooDeep(root: unknown, limit: number): string | null {
  const stack: [unknown, string, number][] = [[root, '', 0]];
  while (stack.length) {
    const [v, path, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > limit) return path;
    for (const [k, child] of Object.entries(v)) stack.push([child, path ? `${path}.${k}` : k, depth + 1]);
  }
  return null;
}

const ESCAPES_TO_CHECK = /\\u(?:0000|[dD][89a-fA-F])/;
/** With the u flag a surrogate pair is one code point, so \p{Cs} matches only a lone half. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The first string (value or key) that Postgres cannot store as sent: one with U+0000, which text cannot
 * hold, or a lone UTF-16 surrogate, which would be stored as U+FFFD. Iterative: bodies may nest deeply.
 */
function findBadString(root: unknown): { path: string; nul: boolean } | null {
  const stack: [unknown, string][] = [[root, '']];
  const bad = (v: string) => v.includes('\u0000') || LONE_SURROGATE.test(v);
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (bad(v)) return { path, nul: v.includes('\u0000') };
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        const p = path ? `${path}.${k}` : k;
        if (bad(k)) return { path: p, nul: k.includes('\u0000') };
        stack.push([child, p]);
      }
    }
  }
  return null;
}

export function parse<T extends z.ZodType>(schema: T, value: unknown, where: 'path' | 'query' | 'body'): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw validationError(r.error, where);
  return r.data;
}
