/**
 * Webhook signing: the spec's `Svc-Signature` scheme, plus the Standard Webhooks headers
 * (https://www.standardwebhooks.com) so off-the-shelf verifiers work too.
 *
 * - `Svc-Signature: v1=<hex>`: lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the
 *   whole secret string including its `whsec_` prefix (UTF-8 bytes).
 * - `webhook-signature: v1,<base64>`: base64 HMAC-SHA256 of `<id>.<timestamp>.<raw body>`, keyed with
 *   the base64-decoded part of the secret after `whsec_`.
 *
 * A secret is therefore `whsec_` followed by the standard (padded) base64 of 24 to 64 random bytes,
 * which both schemes can use. During a rotation both carry two signatures, newest first.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
export const USER_AGENT = 'Svc-Webhooks/1.0';
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const EVENT_ID = /^evt_[0-9A-Za-z]{26}$/;

/** A new webhook secret: `whsec_` + base64 of `bytes` (24..64, default 32) random bytes from the CSPRNG. */
export function newSecret(bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < MIN_KEY_BYTES || bytes > MAX_KEY_BYTES) {
    throw new RangeError(`a webhook secret has ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} random bytes`);
  }
  return SECRET_PREFIX + randomBytes(bytes).toString('base64');
}

/** The Standard Webhooks key: the bytes the base64 after `whsec_` encodes, or null if the secret is not of that form. */
export function standardKey(secret: string): Buffer | null {
  if (!secret.startsWith(SECRET_PREFIX)) return null;
  const b64 = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(b64)) return null;
  const key = Buffer.from(b64, 'base64');
  return key.length >= MIN_KEY_BYTES && key.length <= MAX_KEY_BYTES ? key : null;
}

/** True for a secret both schemes can use (what `newSecret` makes). */
export const isValidSecret = (secret: string): boolean => standardKey(secret) !== null;

/** Lowercase hex HMAC-SHA256 of `<timestamp>.<body>` keyed with the whole secret string: the `Svc-Signature` value after `v1=`. */
export function signPayload({ secret, timestamp, body }: { secret: string; timestamp: number; body: string | Buffer }): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** Base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` keyed with the decoded secret: the Standard Webhooks value after `v1,`. */
export function signStandard({ secret, eventId, timestamp, body }: { secret: string; eventId: string; timestamp: number; body: string | Buffer }): string {
  const key = standardKey(secret);
  if (!key) throw new TypeError(`a webhook secret must be "${SECRET_PREFIX}" followed by base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes`);
  return createHmac('sha256', key).update(`${eventId}.${timestamp}.`).update(body).digest('base64');
}

export type SignatureHeaders = {
  'Content-Type': 'application/json';
  'User-Agent': typeof USER_AGENT;
  'Svc-Webhook-Id': string;
  'Svc-Webhook-Timestamp': string;
  'Svc-Signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
};

/**
 * Every header of one delivery attempt. `timestamp` is the Unix seconds of this attempt (each retry
 * is re-signed with a fresh one); `secrets` are the endpoint's live secrets, newest first: one
 * normally, two for the 24 hours after a rotation. `body` is the exact body that will be sent.
 */
export function signatureHeaders({
  eventId,
  timestamp,
  body,
  secrets,
}: {
  eventId: string;
  timestamp: number;
  body: string | Buffer;
  secrets: readonly string[];
}): SignatureHeaders {
  if (!EVENT_ID.test(eventId)) throw new TypeError(`an event id is evt_<ulid>, not ${JSON.stringify(eventId)}`);
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new TypeError('the timestamp is whole Unix seconds');
  if (secrets.length === 0) throw new TypeError('at least one secret is needed to sign');
  return {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    'Svc-Webhook-Id': eventId,
    'Svc-Webhook-Timestamp': String(timestamp),
    'Svc-Signature': secrets.map((secret) => `v1=${signPayload({ secret, timestamp, body })}`).join(','),
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => `v1,${signStandard({ secret, eventId, timestamp, body })}`).join(' '),
  };
}
