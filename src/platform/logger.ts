import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';

export type { Logger };

export function createLogger(config: Pick<Config, 'AULA_LOG_LEVEL'>, bindings: Record<string, unknown> = {}, fd: 1 | 2 = 1): Logger {
  // Synchronous: an async destination spins on EPIPE when the reader goes away (`aula serve | head`).
  return pino(
    {
      level: config.AULA_LOG_LEVEL,
      base: { pid: process.pid, ...bindings },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ['req.headers.authorization', '*.token', '*.secret', '*.password', '*.AULA_ASR_KEY', '*.AULA_NOTES_KEY', '*.AULA_S3_SECRET_ACCESS_KEY', '*.AULA_TURN_SECRET', '*.AULA_SECRET_KEY'], censor: '[redacted]' },
    },
    pino.destination({ dest: fd, sync: true }),
  );
}

/** The logger of a one-shot CLI command: warnings and worse, on stderr, so stdout holds only the command's answer (`--json`). */
export function createCliLogger(config: Pick<Config, 'AULA_LOG_LEVEL'>): Logger {
  return createLogger({ AULA_LOG_LEVEL: config.AULA_LOG_LEVEL === 'info' ? 'warn' : config.AULA_LOG_LEVEL }, {}, 2);
}
