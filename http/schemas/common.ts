import { z } from 'zod';
import { DEFAULT_PAGE, EXTERNAL_ID_MAX, inApiYears, MAX_PAGE, MAX_YEAR, MIN_YEAR, NO_CONTROL_CHARACTERS, NO_LONE_SURROGATES } from '../../src/services/common.ts';

/**
 * The request and response schemas of the API (zod: validation, error fields and the OpenAPI document)
 * live here, beside the routes; the services take and return the domain types they are checked against.
 */

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/**
 * `schemaOf<T>()(schema)`: the schema, checked to parse to exactly the service's type T. A field the
 * service adds or drops without the schema (or the reverse) fails to compile, so the document and
 * validation cannot drift from what the services take and return.
 */
export const schemaOf =
  <T>() =>
  <S extends z.ZodType>(schema: S & (Same<z.output<S>, T> extends true ? unknown : { schemaParsesTo: z.output<S>; serviceType: T })): S =>
    schema;

export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(DEFAULT_PAGE).describe(`Page size, 1 to ${MAX_PAGE}; default ${DEFAULT_PAGE}.`),
  cursor: z.string().max(512).optional().describe('The nextCursor of the previous page.'),
};

/** Caller-supplied identifiers: printable, no control characters, bounded. */
export const externalId = z
  .string()
  .min(1)
  .max(EXTERNAL_ID_MAX)
  .regex(NO_CONTROL_CHARACTERS, 'must not contain control characters')
  .regex(NO_LONE_SURROGATES, 'must be valid Unicode (a lone UTF-16 surrogate is not)');

/** `:id` positions accept a service id or the caller's externalId. */
export const idParam = z.object({ id: externalId });

export const isoDate = z.iso
  .datetime({ offset: true })
  .refine((v) => {
    const t = Date.parse(v);
    return !Number.isFinite(t) || inApiYears(t); // not a timestamp at all: the format check says so
  }, `must be a timestamp in the years ${MIN_YEAR} to ${MAX_YEAR}`)
  .describe(`ISO 8601 timestamp with an offset, in the years ${MIN_YEAR} to ${MAX_YEAR}`);

export const httpsUrl = z
  .url({ protocol: /^https$/, hostname: z.regexes.domain, error: 'must be an https URL' })
  .max(2048)
  .describe('An https:// URL');
