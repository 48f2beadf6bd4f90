import { z } from 'zod';
import { AppError } from '../errors.ts';

/** Opaque listing cursors: base64url of the sort key of the last item returned. */
export const encodeCursor = (key: unknown[]): string => Buffer.from(JSON.stringify(key)).toString('base64url');

/**
 * A cursor this API handed out, checked part by part (`id`: an id or externalId as stored, `time`: an ISO
 * timestamp in the range Postgres and the API accept), so a forged one is a validation error, never a
 * database error.
 */
export function decodeCursor(cursor: string | undefined, ...parts: ('id' | 'time')[]): string[] | null {
  if (cursor === undefined) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === parts.length && v.every((x, i) => (parts[i] === 'id' ? externalId.safeParse(x).success : isoDate.safeParse(x).success))) return v as string[];
  } catch {
    // fall through
  }
  throw new AppError('validation_failed', { details: { fields: [{ field: 'cursor', in: 'query', code: 'invalid_cursor', message: 'Not a cursor returned by this listing.' }] } });
}

export const MAX_PAGE = 100;
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(50).describe(`Page size, 1 to ${MAX_PAGE}; default 50.`),
  cursor: z.string().max(512).optional().describe('The nextCursor of the previous page.'),
};

/** Caller-supplied identifiers: printable, no control characters, bounded. */
export const externalId = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[^\p{Cc}]+$/u, 'must not contain control characters')
  .regex(/^\P{Cs}+$/u, 'must be valid Unicode (a lone UTF-16 surrogate is not)');

/** `:id` positions accept a service id or the caller's externalId. */
export const idParam = z.object({ id: externalId });

/** Years the API takes: a timestamp outside them (year 0000, say) is a validation error, not a database one. */
export const MIN_YEAR = 1000;
export const MAX_YEAR = 9999;
export const isoDate = z.iso
  .datetime({ offset: true })
  .refine((v) => {
    const t = Date.parse(v);
    if (!Number.isFinite(t)) return true; // not a timestamp at all: the format check says so
    const year = new Date(t).getUTCFullYear();
    return year >= MIN_YEAR && year <= MAX_YEAR;
  }, `must be a timestamp in the years ${MIN_YEAR} to ${MAX_YEAR}`)
  .describe(`ISO 8601 timestamp with an offset, in the years ${MIN_YEAR} to ${MAX_YEAR}`);
export const httpsUrl = z
  .url({ protocol: /^https$/, hostname: z.regexes.domain })
  .max(2048)
  .describe('An https:// URL');

export const ts = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
