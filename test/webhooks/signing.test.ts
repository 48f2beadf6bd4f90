import { createHmac } from 'node:crypto';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { isValidSecret, newSecret, signatureHeaders, signPayload, signStandard, standardKey } from '../../src/services/webhooks/signing.ts';
import { verifySvcSignature } from '../../src/services/webhooks/verify.ts';

const EVENT_ID = 'evt_01jh2k3m4n5p6q7r8s9t0vwxyz';
const body = JSON.stringify({ id: EVENT_ID, type: 'meeting.started', createdAt: '2026-01-05T09:00:00.000Z', organizationId: 'org_1', data: { title: 'Álgebra — 李老师 👩‍🏫' } });

/** Written from the spec's words, independently of src/: lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>`, keyed with the whole secret. */
function specSignature(secret: string, timestamp: string, raw: Buffer): string {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  mac.update(Buffer.concat([Buffer.from(timestamp + '.', 'ascii'), raw]));
  return mac.digest('hex');
}

t.test('newSecret: whsec_ + base64 of 24..64 random bytes', async (t) => {
  const s = newSecret();
  t.match(s, /^whsec_[A-Za-z0-9+/]+={0,2}$/);
  t.equal(standardKey(s)?.length, 32);
  t.equal(standardKey(newSecret(24))?.length, 24);
  t.equal(standardKey(newSecret(64))?.length, 64);
  t.not(newSecret(), newSecret());
  t.throws(() => newSecret(16), RangeError);
  t.throws(() => newSecret(65), RangeError);
  t.ok(isValidSecret(s));
  t.notOk(isValidSecret('whsec_short'));
  t.notOk(isValidSecret('secret_' + 'A'.repeat(43)));
  t.notOk(isValidSecret('whsec_' + '*'.repeat(44)));
  // what standardwebhooks derives from the secret is the same key
  t.doesNotThrow(() => new Webhook(s));
});

t.test('the Standard Webhooks test vector', async (t) => {
  // From the Standard Webhooks specification's examples.
  const sig = signStandard({ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', eventId: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: 1614265330, body: '{"test": 2432232314}' });
  t.equal(sig, 'g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

t.test('signPayload is the spec signature over the exact bytes', async (t) => {
  const secret = newSecret();
  t.equal(signPayload({ secret, timestamp: 1767603600, body }), specSignature(secret, '1767603600', Buffer.from(body, 'utf8')));
  t.equal(signPayload({ secret, timestamp: 1767603600, body: Buffer.from(body) }), signPayload({ secret, timestamp: 1767603600, body }));
  t.match(signPayload({ secret, timestamp: 1, body: '' }), /^[0-9a-f]{64}$/);
});

t.test('signatureHeaders: the spec headers and the Standard Webhooks headers', async (t) => {
  const secret = newSecret();
  const ts = Math.floor(Date.now() / 1000);
  const h = signatureHeaders({ eventId: EVENT_ID, timestamp: ts, body, secrets: [secret] });
  t.same(Object.keys(h).sort(), ['Content-Type', 'Svc-Signature', 'Svc-Webhook-Id', 'Svc-Webhook-Timestamp', 'User-Agent', 'webhook-id', 'webhook-signature', 'webhook-timestamp'].sort());
  t.equal(h['Content-Type'], 'application/json');
  t.equal(h['User-Agent'], 'Svc-Webhooks/1.0');
  t.equal(h['Svc-Webhook-Id'], EVENT_ID);
  t.equal(h['Svc-Webhook-Id'], JSON.parse(body).id, 'equal to the body id');
  t.equal(h['Svc-Webhook-Timestamp'], String(ts));
  t.equal(h['Svc-Signature'], `v1=${specSignature(secret, String(ts), Buffer.from(body))}`);
  t.equal(h['webhook-id'], EVENT_ID);
  t.equal(h['webhook-timestamp'], String(ts));
  t.match(h['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/);
  t.ok(verifySvcSignature({ secret, headers: h, rawBody: body }).ok);
  t.same(new Webhook(secret).verify(body, h), JSON.parse(body), 'standardwebhooks accepts it');

  t.throws(() => signatureHeaders({ eventId: 'msg_1', timestamp: ts, body, secrets: [secret] }), /evt_/);
  t.throws(() => signatureHeaders({ eventId: EVENT_ID, timestamp: 1.5, body, secrets: [secret] }), /Unix seconds/);
  t.throws(() => signatureHeaders({ eventId: EVENT_ID, timestamp: ts, body, secrets: [] }), /secret/);
  t.throws(() => signatureHeaders({ eventId: EVENT_ID, timestamp: ts, body, secrets: ['not-a-whsec'] }), /whsec_/);
});

t.test('rotation: two signatures, new first; either secret verifies', async (t) => {
  const oldSecret = newSecret();
  const newer = newSecret();
  const ts = Math.floor(Date.now() / 1000);
  const h = signatureHeaders({ eventId: EVENT_ID, timestamp: ts, body, secrets: [newer, oldSecret] });
  t.equal(h['Svc-Signature'], `v1=${specSignature(newer, String(ts), Buffer.from(body))},v1=${specSignature(oldSecret, String(ts), Buffer.from(body))}`);
  t.match(h['webhook-signature'], /^v1,\S+ v1,\S+$/);
  t.equal(h['webhook-signature'].split(' ')[0], `v1,${signStandard({ secret: newer, eventId: EVENT_ID, timestamp: ts, body })}`);
  t.ok(verifySvcSignature({ secret: oldSecret, headers: h, rawBody: body }).ok, 'a receiver still on the old secret accepts');
  t.ok(verifySvcSignature({ secret: newer, headers: h, rawBody: body }).ok, 'a receiver on the new secret accepts');
  t.same(verifySvcSignature({ secret: newSecret(), headers: h, rawBody: body }), { ok: false, reason: 'signature_mismatch' });
  t.doesNotThrow(() => new Webhook(oldSecret).verify(body, h), 'standardwebhooks with the old secret');
  t.doesNotThrow(() => new Webhook(newer).verify(body, h), 'standardwebhooks with the new secret');
});

t.test('verifySvcSignature: the receiver rules', async (t) => {
  const secret = newSecret();
  const now = Date.parse('2026-01-05T09:00:00Z');
  const ts = now / 1000;
  const raw = Buffer.from(body, 'utf8');
  const sign = (timestamp: number, b: Buffer | string = raw) => ({
    'svc-webhook-timestamp': String(timestamp),
    'svc-signature': `v1=${specSignature(secret, String(timestamp), Buffer.isBuffer(b) ? b : Buffer.from(b))}`,
  });

  t.same(verifySvcSignature({ secret, headers: sign(ts), rawBody: raw, now }), { ok: true });
  t.same(verifySvcSignature({ secret, headers: sign(ts), rawBody: body, now }), { ok: true }, 'the raw body as a string');
  t.same(verifySvcSignature({ secret, headers: sign(ts), rawBody: new Uint8Array(raw), now }), { ok: true }, 'as a Uint8Array');
  t.same(verifySvcSignature({ secret, headers: sign(ts), rawBody: raw, now: new Date(now) }), { ok: true }, 'now as a Date');

  // tolerance: 5 minutes either way, inclusive
  t.same(verifySvcSignature({ secret, headers: sign(ts - 300), rawBody: raw, now }), { ok: true });
  t.same(verifySvcSignature({ secret, headers: sign(ts + 300), rawBody: raw, now }), { ok: true });
  t.same(verifySvcSignature({ secret, headers: sign(ts - 301), rawBody: raw, now }), { ok: false, reason: 'timestamp_out_of_tolerance' });
  t.same(verifySvcSignature({ secret, headers: sign(ts + 301), rawBody: raw, now }), { ok: false, reason: 'timestamp_out_of_tolerance' });
  t.same(verifySvcSignature({ secret, headers: sign(ts - 3000), rawBody: raw, now, toleranceSeconds: 3600 }), { ok: true });

  // the raw body: re-serialised JSON does not verify
  const reserialised = JSON.stringify(JSON.parse(body), null, 2);
  t.same(verifySvcSignature({ secret, headers: sign(ts), rawBody: reserialised, now }), { ok: false, reason: 'signature_mismatch' });
  t.same(verifySvcSignature({ secret, headers: sign(ts), rawBody: body + ' ', now }), { ok: false, reason: 'signature_mismatch' });
  // the timestamp is signed
  t.same(verifySvcSignature({ secret, headers: { ...sign(ts), 'svc-webhook-timestamp': String(ts + 1) }, rawBody: raw, now }), { ok: false, reason: 'signature_mismatch' });

  // any v1= value; other schemes and junk ignored
  const good = sign(ts)['svc-signature'];
  const many = { 'svc-webhook-timestamp': String(ts), 'svc-signature': `v0=deadbeef, v1=${'0'.repeat(64)} ,v1=short,${good}` };
  t.same(verifySvcSignature({ secret, headers: many, rawBody: raw, now }), { ok: true });
  t.same(verifySvcSignature({ secret, headers: { ...many, 'svc-signature': good.toUpperCase().replace('V1=', 'v1=') }, rawBody: raw, now }), { ok: false, reason: 'signature_mismatch' }, 'the hex is lowercase');

  // header shapes: any case, Fetch Headers, arrays
  t.same(verifySvcSignature({ secret, headers: { 'Svc-Webhook-Timestamp': String(ts), 'SVC-SIGNATURE': good }, rawBody: raw, now }), { ok: true });
  t.same(verifySvcSignature({ secret, headers: new Headers(sign(ts)), rawBody: raw, now }), { ok: true });
  t.same(verifySvcSignature({ secret, headers: { 'svc-webhook-timestamp': String(ts), 'svc-signature': ['v1=00', good] }, rawBody: raw, now }), { ok: true });

  // missing or malformed
  t.same(verifySvcSignature({ secret, headers: { 'svc-signature': good }, rawBody: raw, now }), { ok: false, reason: 'missing_timestamp' });
  t.same(verifySvcSignature({ secret, headers: { 'svc-webhook-timestamp': String(ts) }, rawBody: raw, now }), { ok: false, reason: 'missing_signature' });
  t.same(verifySvcSignature({ secret, headers: { 'svc-webhook-timestamp': String(ts), 'svc-signature': 'v2=abc' }, rawBody: raw, now }), { ok: false, reason: 'missing_signature' });
  for (const bad of ['1.5e9', '-1', 'abc', '0x10', `${ts}.0`, ' ']) {
    const r = verifySvcSignature({ secret, headers: { 'svc-webhook-timestamp': bad, 'svc-signature': good }, rawBody: raw, now });
    t.equal(r.ok, false, `timestamp ${JSON.stringify(bad)} refused`);
  }
  // keyed with the whole secret, prefix included
  const withoutPrefix = secret.slice('whsec_'.length);
  t.same(verifySvcSignature({ secret: withoutPrefix, headers: sign(ts), rawBody: raw, now }), { ok: false, reason: 'signature_mismatch' });
});

t.test('verify.ts stays copyable: node:crypto only', async (t) => {
  const { readFile } = await import('node:fs/promises');
  const src = await readFile(new URL('../../src/services/webhooks/verify.ts', import.meta.url), 'utf8');
  const imports = [...src.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
  t.same(imports, ['node:crypto']);
});
