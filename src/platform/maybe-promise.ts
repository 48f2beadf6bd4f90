/**
 * The request pipeline's one timing trick. The reads it makes before every route (the API key or the
 * admin session from the cache, the leased rate limit) answer a value when they have one and a
 * promise only when they must wait, and the pipeline (http/server.ts) awaits only promises. Measured
 * against plain async code (`npm run bench -- --scenario mint --ablate plain-async`, bench/README):
 * it saves about 3 µs of a mint's 35, 8% of its rate. Everything else is ordinary async code.
 */
export type MaybePromise<T> = T | Promise<T>;
