import { pino, type Logger } from 'pino';
import type { Config } from './config.ts';

export type { Logger };

export function createLogger(config: Pick<Config, 'AULA_LOG_LEVEL'>, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level: config.AULA_LOG_LEVEL,
    base: { pid: process.pid, ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['req.headers.authorization', '*.token', '*.secret', '*.password'], censor: '[redacted]' },
  });
}
