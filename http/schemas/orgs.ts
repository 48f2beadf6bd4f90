import { z } from 'zod';
import { MAX_ALLOWED_ORIGINS, ORIGIN_RULE, parseOrigin } from '../../src/services/orgs.ts';

/** The setting as customers send it: origins (http or https, for staging hosts too), at most 50, normalized and deduplicated. */
export const allowedOrigins = z
  .array(z.string().max(300).refine((v) => parseOrigin(v) !== null, ORIGIN_RULE))
  .max(MAX_ALLOWED_ORIGINS, `at most ${MAX_ALLOWED_ORIGINS} origins`)
  .transform((list) => [...new Set(list.map((v) => parseOrigin(v)!))])
  .describe('Origins (scheme, host and optional port) whose pages may frame the room with the embedding SDK.');
