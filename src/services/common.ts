import { z } from 'zod';
import { AppError } from '../errors.ts';

/** Opaque listing cursors: base64url of the sort key of the last item returned. */
export const encodeCursor = (key: unknown[]): string => Buffer.from(JSON.stringify(key)).toString('base64url');

export function decodeCursor(cursor: string | undefined, arity: number): string[] | null {
  if (cursor === undefined) return null;
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === arity && v.every((x) => typeof x === 'string')) return v;
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
  .regex(/^[^\p{Cc}]+$/u, 'must not contain control characters');

/** `:id` positions accept a service id or the caller's externalId. */
export const idParam = z.object({ id: externalId });

export const isoDate = z.iso.datetime({ offset: true }).describe('ISO 8601 timestamp');
export const httpsUrl = z
  .url({ protocol: /^https$/, hostname: z.regexes.domain })
  .max(2048)
  .describe('An https:// URL');

export const ts = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
