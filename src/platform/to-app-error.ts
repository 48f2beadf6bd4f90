import { AppError } from '../core/errors.ts';
import { databaseUnreachable } from './db/failures.ts';

/**
 * Any thrown value as an AppError; unknown failures become internal_error with the cause kept for the
 * log. A database that cannot be reached is a retryable 503, not the request's fault. (Here, not beside
 * the catalog: telling a database failure apart is the platform's knowledge.)
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (databaseUnreachable(err)) return new AppError('service_unavailable', { message: 'The database is not reachable right now; retry shortly.', details: { failing: ['database'] }, cause: err });
  return new AppError('internal_error', { cause: err });
}
