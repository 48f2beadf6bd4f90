// Before a server starts: the external services it needs must answer. Until they do, one plain line
// says which one, where, and what to check, and the check is tried again with backoff; with
// --fail-fast the command exits instead (69, EX_UNAVAILABLE). Never a stack trace.
import { Redis } from 'ioredis';
import postgres from 'postgres';
import type { Config } from '../../platform/config.ts';

/** Exit code when a service the server needs does not answer and --fail-fast was given (sysexits EX_UNAVAILABLE). */
export const EX_UNAVAILABLE = 69;

export class ServiceUnavailableError extends Error {}

const BACKOFF_MS = [1000, 2000, 4000, 8000, 15_000, 30_000];

/** The URL without its password, for messages. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

async function redisProblem(url: string): Promise<string | null> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 3000, enableOfflineQueue: false });
  let cause: string | null = null; // the socket's error (ECONNREFUSED…) says more than the rejection
  r.on('error', (err: Error) => (cause ??= err.message));
  try {
    await r.connect();
    await r.ping();
    return null;
  } catch (err) {
    return cause ?? ((err as Error).message || String(err));
  } finally {
    r.disconnect();
  }
}

async function postgresProblem(url: string): Promise<string | null> {
  const sql = postgres(url, { max: 1, connect_timeout: 3, idle_timeout: 1, onnotice: () => {} });
  try {
    await sql`select 1`;
    return null;
  } catch (err) {
    const e = err as Error & { code?: string };
    return e.message || e.code || String(err);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** What to check for each service, said once per failure. */
function line(service: 'Redis' | 'PostgreSQL', url: string, why: string, variable: string, next: string): string {
  return `aula: ${service} at ${redact(url)} does not answer (${why}). Check that ${service} is running and reachable there, and that ${variable} is right. ${next}\n`;
}

/**
 * Resolves once the database (when external) and Redis (when configured) answer. `failFast` throws
 * ServiceUnavailableError after the first failed check instead of retrying.
 */
export async function waitForServices(
  config: Config,
  opts: { failFast: boolean; write?: (text: string) => void; sleep?: (ms: number) => Promise<void> },
): Promise<void> {
  const write = opts.write ?? ((text: string) => process.stderr.write(text));
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const checks: [service: 'Redis' | 'PostgreSQL', url: string, variable: string, check: (url: string) => Promise<string | null>][] = [];
  if (config.AULA_DATABASE_URL) checks.push(['PostgreSQL', config.AULA_DATABASE_URL, 'AULA_DATABASE_URL', postgresProblem]);
  if (config.AULA_REDIS_URL) checks.push(['Redis', config.AULA_REDIS_URL, 'AULA_REDIS_URL', redisProblem]);
  for (const [service, url, variable, check] of checks) {
    for (let attempt = 0; ; attempt++) {
      const why = await check(url);
      if (why === null) {
        if (attempt > 0) write(`aula: ${service} at ${redact(url)} answers now; starting.\n`);
        break;
      }
      if (opts.failFast) {
        write(line(service, url, why, variable, 'Exiting (--fail-fast).'));
        throw new ServiceUnavailableError(`${service} is not reachable`);
      }
      const wait = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
      write(line(service, url, why, variable, `Trying again in ${wait / 1000} s (--fail-fast exits instead).`));
      await sleep(wait);
    }
  }
}
