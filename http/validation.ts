import type { z } from 'zod';
import { AppError } from '../src/errors.ts';

/** A zod failure as `validation_failed`, naming every offending field. */
export function validationError(error: z.ZodError, where: 'path' | 'query' | 'body' | 'item'): AppError {
  const fields = error.issues.slice(0, 50).map((i) => ({
    field: i.path.length ? i.path.map(String).join('.') : '(root)',
    in: where,
    code: i.code,
    message: i.message,
  }));
  return new AppError('validation_failed', { details: { fields } });
}
