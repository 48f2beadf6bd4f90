import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';

export type { Logger };

export function createLogger(config: Pick<Config, 'AULA_LOG_LEVEL'>, bindings: Record<string, unknown> = {}): Logger {
  // Synchronous stdout: an async destination spins on EPIPE when the reader goes away (`aula serve | head`).
  return pino(
    {
      level: config.AULA_LOG_LEVEL,
      base: { pid: process.pid, ...bindings },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ['req.headers.authorization', '*.token', '*.secret', '*.password'], censor: '[redacted]' },
    },
    pino.destination({ dest: 1, sync: true }),
  );
}
