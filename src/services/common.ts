import { AppError } from '../core/errors.ts';

/** Opaque listing cursors: base64url of the sort key of the last item returned. */
export const encodeCursor = (key: unknown[]): string => Buffer.from(JSON.stringify(key)).toString('base64url');

/** Caller-supplied identifiers: 1 to 255 characters, printable (no control characters), valid Unicode. */
export const EXTERNAL_ID_MAX = 255;
export const NO_CONTROL_CHARACTERS = /^[^\p{Cc}]+$/u;
export const NO_LONE_SURROGATES = /^\P{Cs}+$/u;
export const isExternalId = (v: unknown): v is string =>
  typeof v === 'string' && v.length >= 1 && v.length <= EXTERNAL_ID_MAX && NO_CONTROL_CHARACTERS.test(v) && NO_LONE_SURROGATES.test(v);

/** Years the API takes: a timestamp outside them (year 0000, say) is a validation error, not a database one. */
export const MIN_YEAR = 1000;
export const MAX_YEAR = 9999;
export const inApiYears = (ms: number): boolean => {
  const year = new Date(ms).getUTCFullYear();
  return year >= MIN_YEAR && year <= MAX_YEAR;
};
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const isApiTimestamp = (v: unknown): boolean => typeof v === 'string' && TIMESTAMP.test(v) && Number.isFinite(Date.parse(v)) && inApiYears(Date.parse(v));

/**
 * A cursor this API handed out, checked part by part (`id`: an id or externalId as stored, `time`: an ISO
 * timestamp in the range Postgres and the API accept), so a forged one is a validation error, never a
 * database error.
 */
export function decodeCursor(cursor: string | undefined, ...parts: ('id' | 'time')[]): string[] | null {
  if (cursor === undefined) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === parts.length && v.every((x, i) => (parts[i] === 'id' ? isExternalId(x) : isApiTimestamp(x)))) return v as string[];
  } catch {
    // fall through
  }
  throw new AppError('validation_failed', { details: { fields: [{ field: 'cursor', in: 'query', code: 'invalid_cursor', message: 'Not a cursor returned by this listing.' }] } });
}

export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 50;
/** A page of a listing: `limit` items after `cursor` (the nextCursor of the previous page). */
export interface PageQuery {
  limit: number;
  cursor?: string | undefined;
}

export const ts = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
