import { Writable } from 'node:stream';
import { pino, type Level } from 'pino';

/** A logger that keeps every line it writes, parsed, for tests that read what the server logged. */
export function memoryLogger(level: Level = 'info') {
  const lines: Record<string, any>[] = [];
  const log = pino(
    { level },
    new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
        done();
      },
    }),
  );
  return { log, lines };
}
