import { randomBytes } from 'node:crypto';
import t from 'tap';
import { parseTrustProxy } from '../../src/platform/client-address.ts';
import { UNKNOWN_CREDENTIALS_PER_MINUTE } from '../../http/credential-guard.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';

// Guessed API keys and admin session tokens cost the database at most a minute's budget per address:
// past it, that address's lookups are refused before any query, while known credentials still work.
const node = await startTestNode(t, { redis: false, overrides: { AULA_TRUST_PROXY: parseTrustProxy('1') } });
const tenant = await createTenant(node);
const guess = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;
const from = (ip: string, authorization: string, path = '/public/users') => api(node, 'GET', path, { headers: { authorization, 'x-forwarded-for': ip } });

t.test('an address spraying random keys is stopped after its budget; a known key from there still works', async (t) => {
  const ip = '198.51.100.20';
  t.equal((await from(ip, `Bearer ${tenant.key}`)).status, 200, 'a real key, known before');
  for (let i = 0; i < UNKNOWN_CREDENTIALS_PER_MINUTE; i++) {
    const res = await from(ip, `Bearer ${guess('aula_sk_')}`);
    if (res.status !== 401) t.fail(`guess ${i} answered ${res.status}`);
  }
  const stopped = await from(ip, `Bearer ${guess('aula_sk_')}`);
  t.equal(stopped.status, 429);
  t.equal(stopped.body.error.code, 'rate_limited');
  t.ok(Number(stopped.headers.get('retry-after')) >= 1, 'with Retry-After');
  const admin = await from(ip, `Bearer ${guess('aula_as_')}`, `/orgs/${tenant.orgId}`);
  t.equal(admin.status, 429, 'admin session guesses share the budget');
  t.equal((await from(ip, `Bearer ${tenant.key}`)).status, 200, 'the known key is still answered');
  t.equal((await from('198.51.100.21', `Bearer ${guess('aula_sk_')}`)).status, 401, 'another address is not affected');
});

t.test('one wrong key repeated is remembered: it never uses up the budget', async (t) => {
  const ip = '198.51.100.30';
  const wrong = `Bearer ${guess('aula_sk_')}`;
  for (let i = 0; i < UNKNOWN_CREDENTIALS_PER_MINUTE + 20; i++) {
    const res = await from(ip, wrong);
    if (res.status !== 401) t.fail(`attempt ${i} answered ${res.status}`);
  }
  t.equal((await from(ip, `Bearer ${guess('aula_sk_')}`)).status, 401, 'a new guess from there is still looked up');
  const token = `Bearer ${guess('aula_as_')}`;
  for (let i = 0; i < 3; i++) t.equal((await from(ip, token, `/orgs/${tenant.orgId}`)).body.error.code, 'admin_session_invalid');
});
