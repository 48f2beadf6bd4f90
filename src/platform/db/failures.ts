/** postgres.js's own codes for a connection that went away or never came. */
const CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/** SQLSTATEs of a server shutting down, restarting, or out of connection slots. */
const UNREACHABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** SQLSTATEs that ask for the transaction to be run again: idle-in-transaction timeout, serialization failure, deadlock. */
const RETRY_STATES = new Set(['25P03', '40001', '40P01']);

const codeOf = (err: unknown): string | null => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : null;
};

/**
 * The database could not be reached: the connection went away or was refused (postgres.js and socket
 * codes, SQLSTATE class 08), the server is shutting down, restarting or full, or the database does not
 * accept connections now. Says nothing about the request itself.
 */
export function databaseUnreachable(err: unknown): boolean {
  const code = codeOf(err);
  if (code === null) return false;
  if (CONNECTION_CODES.has(code) || code.startsWith('08') || UNREACHABLE_STATES.has(code)) return true;
  // 55000 is broad; only "database ... is not currently accepting connections" means unreachable
  const message = (err as { message?: unknown }).message;
  return code === '55000' && typeof message === 'string' && message.includes('not currently accepting connections');
}

/** A failure worth running the transaction again for: the database was unreachable, or Postgres asks for a retry. */
export function retryableDbError(err: unknown): boolean {
  const code = codeOf(err);
  return databaseUnreachable(err) || (code !== null && RETRY_STATES.has(code));
}
