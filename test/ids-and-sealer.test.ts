import t from 'tap';
import { createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { deriveKey, randomString, Sealer, sha256, sha256Hex, StreamBoxOpener } from '../src/platform/crypto.ts';
import { isServiceId, newId, randomId, ulid, ulidFromBytes, ulidToBytes } from '../src/platform/ids.ts';
import { Tokens } from '../src/services/tokens.ts';

const B32 = '0123456789abcdefghjkmnpqrstvwxyz';
const timeOf = (id: string): number => [...id.slice(0, 10)].reduce((n, c) => n * 32 + B32.indexOf(c), 0);

t.test('service ids are lowercase ULIDs that sort in the order they were made', async (t) => {
  const ids = Array.from({ length: 20_000 }, () => newId('ses'));
  t.ok(ids.every((id) => isServiceId('ses', id)), 'prefix and 26 base32 characters');
  t.equal(new Set(ids).size, ids.length, 'unique');
  t.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), 'strictly increasing, also within one millisecond');
  t.ok(Math.abs(timeOf(ids[0]!.slice(4)) - Date.now()) < 5_000, 'the time part is now');
});

t.test('a given time is encoded; a time not after the last one keeps the order', async (t) => {
  const at = Date.parse('2031-03-04T05:06:07.089Z');
  const a = ulid(at);
  t.equal(timeOf(a), at);
  const b = ulid(at - 60_000);
  t.ok(b > a, 'an earlier time still sorts after');
  t.equal(timeOf(b), at, 'with the last id\'s time, as the ulid package\'s monotonic factory does');
  const c = ulid(at + 1);
  t.equal(timeOf(c), at + 1);
  t.not(c.slice(10), a.slice(10), 'a new millisecond draws new randomness');
});

t.test('pooled random strings', async (t) => {
  const many = Array.from({ length: 2_000 }, () => randomId(16)); // 32 KB: several pool refills
  t.ok(many.every((s) => /^[A-Za-z0-9_-]{22}$/.test(s)));
  t.equal(new Set(many).size, many.length);
  t.match(randomString(16, 'hex'), /^[0-9a-f]{32}$/);
  t.equal(randomString(5000, 'hex').length, 10_000, 'larger than the pool');
});

t.test('sealed boxes open only with the same key and purpose, and not when altered', async (t) => {
  const key = deriveKey('a secret of some length', 'join-token');
  const sealer = new Sealer(key, 'join-token');
  const boxes = Array.from({ length: 1_000 }, (_, i) => sealer.sealJson({ i, s: 'é'.repeat(i % 7) }));
  t.ok(boxes.every((b, i) => sealer.openJson<{ i: number; s: string }>(b)?.i === i && sealer.openJson<{ s: string }>(b)?.s === 'é'.repeat(i % 7)));
  t.equal(new Set(boxes.map((b) => b.subarray(1, 13).toString('hex'))).size, boxes.length, 'a fresh nonce each time');
  t.equal(boxes[0]![0], 1, 'format version 1');
  t.same(sealer.open(sealer.seal(Buffer.from([0, 1, 2]))), Buffer.from([0, 1, 2]), 'bytes too');
  t.same(sealer.open(sealer.seal('')), Buffer.alloc(0), 'and nothing');
  for (const at of [0, 1, 13, boxes[5]!.length - 1]) {
    const bad = Buffer.from(boxes[5]!);
    bad[at]! ^= 1;
    t.equal(sealer.open(bad), null, `a flipped bit at ${at}`);
  }
  t.equal(new Sealer(key, 'media-room').open(boxes[5]!), null, 'another purpose');
  t.equal(new Sealer(deriveKey('another secret', 'join-token'), 'join-token').open(boxes[5]!), null, 'another key');
});

t.test('sha256 helpers agree', async (t) => {
  t.equal(sha256('aula').toString('hex'), sha256Hex('aula'));
  t.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});

t.test('ULIDs pack into 16 bytes and back', async (t) => {
  const buf = Buffer.alloc(16);
  const ids = Array.from({ length: 5_000 }, () => newId('usr'));
  t.ok(ids.every((id) => ulidToBytes(id, 4, buf, 0) && ulidFromBytes(buf, 0) === id.slice(4)), 'round trip');
  t.ok(ulidToBytes('7zzzzzzzzzzzzzzzzzzzzzzzzz', 0, buf, 0), 'the largest ULID');
  t.equal(buf.toString('hex'), 'f'.repeat(32));
  t.notOk(ulidToBytes('8zzzzzzzzzzzzzzzzzzzzzzzzz', 0, buf, 0), 'past 128 bits');
  t.notOk(ulidToBytes('0000000000000000000000000u', 0, buf, 0), 'a letter Crockford leaves out');
  t.notOk(ulidToBytes('0000000000000000000000000A', 0, buf, 0), 'upper case');
  t.notOk(ulidToBytes('000000000000000000000000é0', 0, buf, 0), 'beyond ASCII');
  t.notOk(ulidToBytes('000', 0, buf, 0), 'too short');
});

t.test('join tokens: binary claims in an AES-256-GCM box; the box\'s nonce is the token id', async (t) => {
  const tokens = new Tokens('a secret of some length');
  const base = { o: newId('org'), m: newId('mtg'), u: newId('usr'), r: 'COHOST' as const, i: 1_763_000_000_123, e: 1_763_000_300_123, s: true };
  const plain = tokens.join.issue({ ...base, n: null, d: null });
  t.match(plain, /^jt_[A-Za-z0-9_-]+$/);
  t.equal(plain.length, 3 + Math.ceil(((1 + 12 + 63 + 16) * 4) / 3), '126 characters without a name or redirect');
  const read = tokens.join.read(plain)!;
  t.same({ ...read, j: undefined }, { ...base, n: null, d: null, j: undefined });
  t.equal(read.j, Buffer.from(plain.slice(3), 'base64url').toString('base64url', 1, 13), 'the token id is the nonce');
  t.match(read.j, /^[A-Za-z0-9_-]{16}$/);

  const full = { ...base, r: 'VIEWER' as const, s: false, n: 'Zoë 🎓 O\'Brien', d: 'https://school.example/after?x=1&y=ü' };
  t.same({ ...tokens.join.read(tokens.join.issue(full))!, j: undefined }, { ...full, j: undefined }, 'name and redirect, unicode');
  const long = { ...full, n: 'n'.repeat(200), d: `https://school.example/${'p'.repeat(2000)}` };
  t.same({ ...tokens.join.read(tokens.join.issue(long))!, j: undefined }, { ...long, j: undefined }, 'a long name and redirect');
  t.same({ ...tokens.join.read(plain)!, j: undefined }, { ...base, n: null, d: null, j: undefined }, 'a short one after a long one');

  const ids = new Set(Array.from({ length: 2_000 }, () => tokens.join.read(tokens.join.issue({ ...base, n: null, d: null }))!.j));
  t.equal(ids.size, 2_000, 'every token has its own id');

  // claims as JSON (the first format, whose tokens expired on 2026-11-23) are not join claims
  const sealer = new Sealer(deriveKey('a secret of some length', 'join-token'), 'join-token');
  t.equal(tokens.join.read(`jt_${sealer.sealJson({ j: 'x'.repeat(22), ...base, n: 'Ann', d: null }).toString('base64url')}`), null, 'JSON claims do not open');

  const raw = Buffer.from(plain.slice(3), 'base64url');
  raw[20]! ^= 1;
  t.equal(tokens.join.read(`jt_${raw.toString('base64url')}`), null, 'altered');
  t.equal(new Tokens('another secret').join.read(plain), null, 'another server secret');
  t.equal(tokens.media.read(`mrt_${plain.slice(3)}`), null, 'another kind');
  t.throws(() => tokens.join.issue({ ...base, o: 'org_not-a-ulid', n: null, d: null }), /service ids/);
});

t.test('join tokens sealed by the AES-CTR + HMAC boxes of 2026-11-22 to 24 still open until they expire', async (t) => {
  // minted by that code with this secret: fixed bytes, not made by the code under test
  const secret = 'a secret for the token format fixtures';
  const token =
    'jt_Au8lS6htDlYonRrvZxoNJFfI76dF9nNJrtj0C0RwMQKXOgQL9llQzRsuwcDjrTH4mQaNcSMMv-uX1DhxpBlZpVMBrMK8kJQg9c9V6U8uIWcOsikvo-bS-96oUxLrLXfzSQOoY3R2abyTAI9wyy8ijP1UjG39Is0qzUrqtkjfN4s5';
  t.same(new Tokens(secret).join.read(token), {
    j: '7yVLqG0OViidGu9nGg0kVw',
    o: 'org_01kav9ft00m2cy489pkcsrq7n8',
    m: 'mtg_01kav9ft00m2cy489pkcsrq7n9',
    u: 'usr_01kav9ft00m2cy489pkcsrq7na',
    r: 'PARTICIPANT',
    n: 'Zoë',
    i: 1764000000000,
    e: 1764000300000,
    s: true,
    d: 'https://lms.example/after',
  }, 'claims and id (the box\'s IV) as they were minted');
  t.equal(new Tokens('another secret').join.read(token), null, 'another server secret');
  // the box is checked with Node's HMAC and AES-CTR, as it was sealed
  const key = deriveKey(secret, 'join-token');
  const box = Buffer.from(token.slice(3), 'base64url');
  const end = box.length - 16;
  const macKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'aula:join-token:hmac', 32));
  t.ok(createHmac('sha256', macKey).update(box.subarray(0, end)).digest().subarray(0, 16).equals(box.subarray(end)), 'encrypt-then-MAC tag');
  const encKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'aula:join-token:ctr', 32));
  t.equal(createDecipheriv('aes-256-ctr', encKey, box.subarray(1, 17)).update(box.subarray(17, end))[0], 2, 'binary claims inside');
  const opener = new StreamBoxOpener(key, 'join-token');
  for (const at of [0, 1, 16, 17, box.length - 1]) {
    const bad = Buffer.from(box);
    bad[at]! ^= 1;
    t.equal(opener.open(bad), null, `a flipped bit at ${at}`);
  }
  t.equal(opener.open(box.subarray(0, box.length - 1)), null, 'cut short');
  t.equal(new StreamBoxOpener(key, 'media-room').open(box), null, 'another purpose');
});
