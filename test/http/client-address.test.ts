import fc from 'fast-check';
import ipaddr from 'ipaddr.js';
import t from 'tap';
import { clientAddress, parseTrustProxy } from '../../src/platform/client-address.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { api, startTestNode } from '../helpers/node.ts';

// Whose address counts for per-address limits: the socket's, or what trusted proxies vouch for. The left
// of X-Forwarded-For is written by the client, so it never counts unless every hop before it is trusted.

t.test('no trusted proxy: the socket peer, whatever the header says', async (t) => {
  t.equal(clientAddress('203.0.113.9', '1.2.3.4', null), '203.0.113.9');
  t.equal(clientAddress('::ffff:203.0.113.9', undefined, null), '203.0.113.9', 'IPv4-mapped IPv6 reads as IPv4');
});

t.test('a hop count: the address the nearest N proxies vouch for', async (t) => {
  const one = parseTrustProxy('1');
  t.equal(clientAddress('10.0.0.2', '198.51.100.7', one), '198.51.100.7', 'one proxy: the address it appended');
  t.equal(clientAddress('10.0.0.2', '6.6.6.6, 198.51.100.7', one), '198.51.100.7', 'a forged left-most entry is ignored');
  const two = parseTrustProxy('2');
  t.equal(clientAddress('10.0.0.2', '6.6.6.6, 198.51.100.7, 10.0.0.9', two), '198.51.100.7', 'two proxies: the entry before the second');
  t.equal(clientAddress('10.0.0.2', '198.51.100.7', two), '198.51.100.7', 'fewer entries than hops: the farthest named');
  t.equal(clientAddress('10.0.0.2', undefined, one), '10.0.0.2', 'no header: the peer');
  t.equal(clientAddress('10.0.0.2', '6.6.6.6, not-an-ip', one), '10.0.0.2', 'a malformed entry vouches for nothing');
});

t.test('proxy networks: the first address from the right that is not a proxy', async (t) => {
  const nets = parseTrustProxy('10.0.0.0/8, fd00::/8, 127.0.0.1');
  t.equal(clientAddress('127.0.0.1', '6.6.6.6, 198.51.100.7, 10.1.2.3', nets), '198.51.100.7');
  t.equal(clientAddress('::ffff:10.0.0.5', '2001:db8::1', nets), '2001:db8::1', 'mapped peer matched against IPv4 networks');
  t.equal(clientAddress('198.51.100.50', '6.6.6.6', nets), '198.51.100.50', 'a peer that is not a proxy: its own address, the header ignored');
  t.equal(clientAddress('10.0.0.2', '6.6.6.6, 10.9.9.9, not-an-ip', nets), '10.0.0.2', 'a malformed entry vouches for nothing');
  const named = parseTrustProxy('loopback, uniquelocal');
  t.equal(clientAddress('127.0.0.1', '198.51.100.7, fd12::1', named), '198.51.100.7', "proxy-addr's names for networks");
  t.equal(clientAddress('127.0.0.1', '2001:DB8:0:0:0:0:0:1', named), '2001:db8::1', 'the vouched address in its canonical text');
});

t.test('every address is read by ipaddr.js and keyed by its canonical text', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.nat(255), { minLength: 4, maxLength: 4 }), (octets) => {
      const text = octets.join('.');
      return clientAddress(text, undefined, null) === ipaddr.parse(text).toString();
    }),
  );
  t.equal(clientAddress('10.0.0.2', ' 198.51.100.7 ', parseTrustProxy('1')), '198.51.100.7', 'spaces around an entry');
  t.equal(clientAddress('10.0.0.2', '010.0.0.1', parseTrustProxy('1')), ipaddr.parse('010.0.0.1').toString(), 'leading zeros: as ipaddr.js reads them');
  t.equal(clientAddress('10.0.0.2', '256.1.1.1', parseTrustProxy('1')), '10.0.0.2', 'not an address: vouches for nothing');
  t.equal(clientAddress('10.0.0.2', '1.2.3.4.5', parseTrustProxy('1')), '10.0.0.2');
});

t.test('the setting says what is wrong', async (t) => {
  t.equal(parseTrustProxy('false'), null);
  t.equal(parseTrustProxy('0'), null);
  t.throws(() => parseTrustProxy('true'), /number of proxy hops/);
  t.throws(() => parseTrustProxy('10.0.0.0/99'), /neither a hop count nor an address/);
  t.throws(() => parseTrustProxy('11'), /at most 10/);
  t.throws(() => loadConfig({ AULA_TRUST_PROXY: 'true' }), /AULA_TRUST_PROXY: takes the number of proxy hops/);
});

t.test('over HTTP: the per-address sign-in budget follows the vouched address, not the forged one', async (t) => {
  const node = await startTestNode(t, { redis: false, overrides: { AULA_TRUST_PROXY: parseTrustProxy('1') } });
  const attempt = (forwardedFor: string) =>
    api(node, 'POST', '/auth/sign-in', { body: { orgId: 'org_none', email: 'a@b.example', password: 'wrong-password' }, headers: { 'x-forwarded-for': forwardedFor } });
  const first = await attempt('1.1.1.1, 198.51.100.7');
  const second = await attempt('2.2.2.2, 198.51.100.7');
  t.equal(first.status, 401);
  t.equal(Number(second.headers.get('x-ratelimit-remaining')), Number(first.headers.get('x-ratelimit-remaining')) - 1, 'a new forged address does not get a fresh budget');
  const other = await attempt('1.1.1.1, 198.51.100.8');
  t.ok(Number(other.headers.get('x-ratelimit-remaining')) > Number(second.headers.get('x-ratelimit-remaining')), 'another vouched address has its own');
});
