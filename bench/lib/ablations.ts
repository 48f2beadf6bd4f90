/**
 * Parts of the mint path that bench/servers/aula.ts can swap for cheaper stand-ins on the running node,
 * so a run with one part removed shows what that part costs (`npm run bench -- --ablate all`).
 */
export const ABLATIONS = {
  /** the per-key limit counted in this process (rate-limiter-flexible's memory limiter) instead of Redis */
  'rate-limit-local': 'rate limit in process memory instead of a Redis round trip',
  /** no limit at all */
  'no-rate-limit': 'no rate limit',
  /**
   * the pipeline's per-request `app.log.child({ reqId })` returns the parent logger; the pipeline now makes
   * the child only when a request logs, which at the bench's warn level none does, so this removes nothing
   */
  'no-log-child': 'no per-request pino child logger',
  /** the mint route's zod schemas (path params, body) pass the input through unchecked */
  'no-zod': 'no zod parsing of params and body',
  /** the join token is a constant instead of an AES-256-GCM sealed box of its claims */
  'no-seal': 'no AES-GCM seal of the token',
  /**
   * the join token is one real token sealed once, so the response keeps its size: set against no-seal, it
   * tells the seal's own cost from what a shorter token saves in the response
   */
  'sealed-once': 'one token sealed at start, the same size as a real one',
  /** the pipeline's per-request Prometheus counting (src/metrics.ts `RouteMeter.record`) does nothing */
  'no-metrics': 'no Prometheus request metrics',
  /**
   * Not a removal but the plain version of the pipeline's one trick (src/maybe-promise.ts): the API-key
   * and admin-session lookups and the rate limit always answer a promise, as async functions would, so
   * the pipeline awaits each instead of taking a cached value as it is
   */
  'plain-async': 'the credential and rate-limit reads answer promises (plain async code)',
} as const;

export type Ablation = keyof typeof ABLATIONS;
export const ABLATION_NAMES = Object.keys(ABLATIONS) as Ablation[];

/** Everything at once (no-rate-limit covers rate-limit-local): what is left is uWS and the pipeline's own work. */
export const ALL_AT_ONCE: Ablation[] = ['no-rate-limit', 'no-log-child', 'no-zod', 'no-seal', 'no-metrics'];
