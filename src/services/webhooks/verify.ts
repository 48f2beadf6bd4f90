/**
 * Verifying Aula webhooks on the receiving side. This file depends on nothing but `node:crypto`, so it
 * can be copied into a receiver as it is.
 *
 * @example
 * ```ts
 * import http from 'node:http';
 * import { verifySvcSignature } from './verify.ts';
 *
 * const secret = process.env.SVC_WEBHOOK_SECRET!; // whsec_..., shown when the endpoint was created
 *
 * http.createServer((req, res) => {
 *   const chunks: Buffer[] = [];
 *   req.on('data', (c: Buffer) => chunks.push(c));
 *   req.on('end', () => {
 *     const rawBody = Buffer.concat(chunks); // the raw bytes: never re-serialise parsed JSON
 *     const result = verifySvcSignature({ secret, headers: req.headers, rawBody });
 *     if (!result.ok) {
 *       res.writeHead(400).end(result.reason);
 *       return;
 *     }
 *     const event = JSON.parse(rawBody.toString('utf8'));
 *     // Deliveries are at least once: skip an event.id already handled (keep ids 7 days or more).
 *     res.writeHead(204).end();
 *   });
 * }).listen(3000);
 * ```
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Headers as Node's `req.headers`, a Fetch `Headers`, or a plain object with names in any case. */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

export type VerifyFailure =
  | 'missing_timestamp' // no Svc-Webhook-Timestamp header
  | 'invalid_timestamp' // not whole Unix seconds
  | 'timestamp_out_of_tolerance' // more than toleranceSeconds from now, either way (a replay, or a skewed clock)
  | 'missing_signature' // no Svc-Signature header, or no v1= value in it
  | 'signature_mismatch'; // no v1= value matches: wrong secret, or the body or timestamp was altered

export type VerifyResult = { ok: true } | { ok: false; reason: VerifyFailure };

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const lower = name.toLowerCase();
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() !== lower) continue;
    const v = record[key];
    return Array.isArray(v) ? v.join(',') : v;
  }
  return undefined;
}

/**
 * Verifies the `Svc-Signature` of one webhook delivery, following the spec's receiver rules:
 *
 * 1. the signed content is `<Svc-Webhook-Timestamp>.<raw body>`: pass the body exactly as received
 *    (a Buffer, or the string it decodes to), never JSON that was parsed and serialised again;
 * 2. the timestamp must be within `toleranceSeconds` (default 300, the spec's 5 minutes) of `now`,
 *    in either direction;
 * 3. the expected value is the lowercase hex HMAC-SHA256 of that content keyed with the whole secret
 *    string, `whsec_` prefix included;
 * 4. the header may carry several comma-separated `v1=<hex>` values (two during the 24 hours after a
 *    secret rotation, new first); the delivery is accepted if ANY of them equals the expected value,
 *    compared in constant time. Values of other schemes are ignored.
 *
 * Answer a failed verification with 400. The Standard Webhooks headers (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature`) are sent as well and can be checked with any Standard
 * Webhooks library instead.
 *
 * @param args.secret The endpoint's signing secret (`whsec_...`).
 * @param args.headers The request headers (`req.headers`, a Fetch `Headers`, or a plain object).
 * @param args.rawBody The raw request body.
 * @param args.toleranceSeconds How far the timestamp may be from now; default 300.
 * @param args.now The current time in milliseconds since the epoch (or a Date); default `Date.now()`.
 * @returns `{ ok: true }`, or `{ ok: false, reason }` naming the first rule that failed.
 */
export function verifySvcSignature(args: {
  secret: string;
  headers: WebhookHeaders;
  rawBody: string | Buffer | Uint8Array;
  toleranceSeconds?: number;
  now?: number | Date;
}): VerifyResult {
  const { secret, headers, rawBody, toleranceSeconds = 300 } = args;
  const nowMs = args.now === undefined ? Date.now() : typeof args.now === 'number' ? args.now : args.now.getTime();

  const ts = header(headers, 'Svc-Webhook-Timestamp')?.trim();
  if (ts === undefined || ts === '') return { ok: false, reason: 'missing_timestamp' };
  if (!/^\d{1,15}$/.test(ts)) return { ok: false, reason: 'invalid_timestamp' };
  if (Math.abs(nowMs / 1000 - Number(ts)) > toleranceSeconds) return { ok: false, reason: 'timestamp_out_of_tolerance' };

  const candidates = (header(headers, 'Svc-Signature') ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.startsWith('v1='))
    .map((part) => Buffer.from(part.slice(3), 'utf8'));
  if (candidates.length === 0) return { ok: false, reason: 'missing_signature' };

  const expected = Buffer.from(createHmac('sha256', secret).update(`${ts}.`).update(rawBody).digest('hex'), 'utf8');
  let matched = false;
  for (const candidate of candidates) {
    // timingSafeEqual needs equal lengths; a length mismatch reveals only the length of a public format.
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched ? { ok: true } : { ok: false, reason: 'signature_mismatch' };
}
