import t from 'tap';
import { allowPrivateTargets, loadConfig } from '../../src/platform/config.ts';
import { checkTargetSyntax, checkTargetUrl, classifyAddress, forbiddenName, resolveVetted, type LookupFn } from '../../src/services/webhooks/targets.ts';

/** A lookup for names that must never be resolved (IP literals, names refused by rule). */
const noLookup: LookupFn = async (host) => {
  throw new Error(`lookup must not be called (asked for ${host})`);
};
/** A lookup that answers every name with the given addresses. */
const resolvesTo = (...addresses: string[]): LookupFn => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

const PUBLIC_V4 = '93.184.215.14';
const PUBLIC_V6 = '2606:2800:21f:cb07:6820:80da:af6b:8b2c';

t.test('the SSRF matrix: every IP-literal spelling is normalised and refused with its range', async (t) => {
  // [url, the hostname WHATWG URL gives, the range it is refused for]
  const matrix: Array<[string, string, string]> = [
    ['https://127.0.0.1/', '127.0.0.1', 'loopback'],
    ['https://2130706433/', '127.0.0.1', 'loopback'], // decimal
    ['https://0x7f.1/', '127.0.0.1', 'loopback'], // hex, short form
    ['https://017700000001/', '127.0.0.1', 'loopback'], // octal
    ['https://0177.0.0.1/', '127.0.0.1', 'loopback'], // octal octet
    ['https://0x7f000001/', '127.0.0.1', 'loopback'], // hex
    ['https://127.1/', '127.0.0.1', 'loopback'], // short form
    ['https://%31%32%37.0.0.1/', '127.0.0.1', 'loopback'], // percent-encoded
    ['https://\uff11\uff12\uff17.0.0.1/', '127.0.0.1', 'loopback'], // full-width digits
    ['https://127.0.0.1./', '127.0.0.1', 'loopback'], // trailing dot
    ['https://[::1]/', '[::1]', 'loopback'],
    ['https://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]', 'loopback'], // IPv4-mapped, dotted
    ['https://[::ffff:7f00:1]/', '[::ffff:7f00:1]', 'loopback'], // IPv4-mapped, hex
    ['https://[0:0:0:0:0:ffff:127.0.0.1]/', '[::ffff:7f00:1]', 'loopback'],
    ['https://[::127.0.0.1]/', '[::7f00:1]', 'loopback'], // IPv4-compatible (deprecated)
    ['https://[::ffff:0:7f00:1]/', '[::ffff:0:7f00:1]', 'loopback'], // IPv4-translated (RFC 6145)
    ['https://[64:ff9b::a9fe:a9fe]/', '[64:ff9b::a9fe:a9fe]', 'metadata'], // NAT64 of 169.254.169.254
    ['https://[64:ff9b::169.254.169.254]/', '[64:ff9b::a9fe:a9fe]', 'metadata'],
    ['https://[64:ff9b::a00:1]/', '[64:ff9b::a00:1]', 'private'], // NAT64 of 10.0.0.1
    ['https://[64:ff9b:1::a9fe:a9fe]/', '[64:ff9b:1::a9fe:a9fe]', 'metadata'], // local-use NAT64
    ['https://[64:ff9b:1::808:808]/', '[64:ff9b:1::808:808]', 'nat64Local'], // local-use NAT64 of a public address: still refused
    ['https://[2002:a9fe:a9fe::]/', '[2002:a9fe:a9fe::]', 'metadata'], // 6to4 of 169.254.169.254
    ['https://[2002:7f00:1::1]/', '[2002:7f00:1::1]', 'loopback'], // 6to4 of 127.0.0.1
    ['https://[2002:808:808::1]/', '[2002:808:808::1]', '6to4'], // 6to4 of a public address: refused all the same
    // Teredo, RFC 4380's example: server 65.54.227.120, client 3fff:fdd2 inverted = 192.0.2.45, a documentation address
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', '[2001:0:4136:e378:8000:63bf:3fff:fdd2]', 'documentation'],
    ['https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/', '[2001:0:4136:e378:8000:63bf:f7f7:f7f7]', 'teredo'], // client 8.8.8.8: refused all the same
    ['https://[2001:0:7f00:1::1]/', '[2001:0:7f00:1::1]', 'loopback'], // Teredo with a loopback server part
    ['https://[fd00::1]/', '[fd00::1]', 'uniqueLocal'],
    ['https://[fc00::1]/', '[fc00::1]', 'uniqueLocal'],
    ['https://[fe80::1]/', '[fe80::1]', 'linkLocal'],
    ['https://[fec0::1]/', '[fec0::1]', 'deprecatedSiteLocal'],
    ['https://[fd00:ec2::254]/', '[fd00:ec2::254]', 'metadata'], // AWS IMDS over IPv6
    ['https://[fd20:ce::254]/', '[fd20:ce::254]', 'metadata'], // GCP metadata over IPv6
    ['https://0.0.0.0/', '0.0.0.0', 'unspecified'],
    ['https://0/', '0.0.0.0', 'unspecified'],
    ['https://0.1.2.3/', '0.1.2.3', 'unspecified'],
    ['https://[::]/', '[::]', 'unspecified'],
    ['https://10.0.0.1/', '10.0.0.1', 'private'],
    ['https://172.16.0.1/', '172.16.0.1', 'private'],
    ['https://172.31.255.255/', '172.31.255.255', 'private'],
    ['https://192.168.1.1/', '192.168.1.1', 'private'],
    ['https://100.64.0.1/', '100.64.0.1', 'carrierGradeNat'],
    ['https://100.127.255.254/', '100.127.255.254', 'carrierGradeNat'],
    ['https://169.254.169.254/', '169.254.169.254', 'metadata'],
    ['https://0xa9fea9fe/', '169.254.169.254', 'metadata'],
    ['https://169.254.170.2/', '169.254.170.2', 'metadata'], // AWS ECS task metadata
    ['https://100.100.100.200/', '100.100.100.200', 'metadata'], // Alibaba
    ['https://169.254.1.1/', '169.254.1.1', 'linkLocal'],
    ['https://224.0.0.1/', '224.0.0.1', 'multicast'],
    ['https://239.255.255.250/', '239.255.255.250', 'multicast'],
    ['https://[ff02::1]/', '[ff02::1]', 'multicast'],
    ['https://255.255.255.255/', '255.255.255.255', 'broadcast'],
    ['https://192.0.0.1/', '192.0.0.1', 'ietfProtocol'],
    ['https://192.0.0.192/', '192.0.0.192', 'metadata'],
    ['https://192.0.2.1/', '192.0.2.1', 'documentation'],
    ['https://198.51.100.7/', '198.51.100.7', 'documentation'],
    ['https://203.0.113.9/', '203.0.113.9', 'documentation'],
    ['https://198.18.0.1/', '198.18.0.1', 'benchmarking'],
    ['https://198.19.255.1/', '198.19.255.1', 'benchmarking'],
    ['https://192.88.99.1/', '192.88.99.1', '6to4Relay'],
    ['https://240.0.0.1/', '240.0.0.1', 'reserved'],
    ['https://[2001:db8::1]/', '[2001:db8::1]', 'reserved'], // documentation
    ['https://[3fff::1]/', '[3fff::1]', 'reserved'], // documentation (RFC 9637)
    ['https://[100::1]/', '[100::1]', 'discard'],
    ['https://[2001:2::1]/', '[2001:2::1]', 'benchmarking'],
    ['https://[4000::1]/', '[4000::1]', 'reserved'], // outside 2000::/3
  ];
  for (const [url, hostname, range] of matrix) {
    t.equal(new URL(url).hostname, hostname, `${url} parses to ${hostname}`);
    const r = await checkTargetUrl(url, { lookup: noLookup });
    t.match(r, { ok: false, reason: 'forbidden_address', range }, `${url} refused as ${range}`);
    // The allowPrivate switch never opens these: they are not a developer's local receiver.
    if (!['loopback', 'private', 'carrierGradeNat', 'uniqueLocal'].includes(range)) {
      t.match(await checkTargetUrl(url, { lookup: noLookup, allowPrivate: true }), { ok: false, range }, `${url} refused even with allowPrivate`);
    }
  }
});

t.test('URLs the WHATWG parser rejects outright are invalid, not guessed at', async (t) => {
  for (const url of ['https://[fe80::1%25eth0]/', 'https://[fe80::1%eth0]/', 'https://1.2.3.4.5/', 'https://256.0.0.1/', 'https://4294967296/', 'not a url', '//example.com/', 'https://xn--localhost/']) {
    t.match(await checkTargetUrl(url, { lookup: noLookup }), { ok: false, reason: 'invalid_url' }, url);
  }
});

t.test('public literals are allowed, and NAT64 of a public address too', async (t) => {
  for (const url of [`https://${PUBLIC_V4}/`, `https://${PUBLIC_V4}:8443/hooks?x=1`, `https://[${PUBLIC_V6}]/`, 'https://[64:ff9b::808:808]/', 'https://[::ffff:8.8.8.8]/', 'https://1.1.1.1/']) {
    const r = await checkTargetUrl(url, { lookup: noLookup });
    t.match(r, { ok: true }, url);
    t.equal(r.ok && r.addresses[0]?.range, 'unicast', `${url} is unicast`);
  }
});

t.test('scheme and userinfo rules', async (t) => {
  t.match(await checkTargetUrl(`http://${PUBLIC_V4}/`, { lookup: noLookup }), { ok: false, reason: 'scheme' });
  t.match(await checkTargetUrl('http://example.com/', { lookup: noLookup }), { ok: false, reason: 'scheme' });
  t.match(await checkTargetUrl('ftp://example.com/', { lookup: noLookup, allowPrivate: true }), { ok: false, reason: 'scheme' });
  t.match(await checkTargetUrl('file:///etc/passwd', { lookup: noLookup, allowPrivate: true }), { ok: false, reason: 'scheme' });
  t.match(await checkTargetUrl('gopher://example.com/', { lookup: noLookup }), { ok: false, reason: 'scheme' });
  t.match(await checkTargetUrl('https://user:pw@example.com/', { lookup: noLookup }), { ok: false, reason: 'userinfo' });
  t.match(await checkTargetUrl('https://user@example.com/', { lookup: noLookup }), { ok: false, reason: 'userinfo' });
  t.match(await checkTargetUrl('https://:pw@example.com/', { lookup: noLookup }), { ok: false, reason: 'userinfo' });
  t.match(await checkTargetUrl('https://example.com:8443/hook', { lookup: resolvesTo(PUBLIC_V4) }), { ok: true }, 'a port is allowed');
});

t.test('names refused by rule, before any resolution', async (t) => {
  const names: Array<[string, string]> = [
    ['localhost', 'loopback'],
    ['LOCALHOST', 'loopback'],
    ['localhost.', 'loopback'],
    ['api.localhost', 'loopback'],
    ['metadata.google.internal', 'metadata'],
    ['metadata.google.internal.', 'metadata'],
    ['metadata.goog', 'metadata'],
    ['metadata', 'metadata'],
    ['instance-data.ec2.internal', 'metadata'],
    ['host.docker.internal', 'localName'],
    ['db.internal', 'localName'],
    ['printer.local', 'localName'],
    ['nas.localdomain', 'localName'],
    ['router.home.arpa', 'localName'],
    ['intranet', 'singleLabel'],
  ];
  for (const [name, range] of names) {
    t.match(await checkTargetUrl(`https://${name}/`, { lookup: noLookup }), { ok: false, reason: 'forbidden_name', range }, name);
  }
  t.equal(forbiddenName('example.com'), null);
  t.equal(forbiddenName('internal.example.com'), null, 'only the suffix counts');
  t.equal(forbiddenName('localhost.example.com'), null);
});

t.test('names resolving to a forbidden address are refused (any address of them)', async (t) => {
  const cases: Array<[string[], string]> = [
    [['127.0.0.1'], 'loopback'],
    [['10.1.2.3'], 'private'],
    [['::1'], 'loopback'],
    [['::ffff:169.254.169.254'], 'metadata'],
    [['169.254.169.254'], 'metadata'],
    [['fd00:ec2::254'], 'metadata'],
    [['100.64.1.1'], 'carrierGradeNat'],
    [['0.0.0.0'], 'unspecified'],
    [['fe80::1'], 'linkLocal'],
    [['64:ff9b::7f00:1'], 'loopback'],
    [[PUBLIC_V4, '127.0.0.1'], 'loopback'], // public and private: refused
    [['127.0.0.1', PUBLIC_V4], 'loopback'],
    [[PUBLIC_V6, 'fd12:3456::1'], 'uniqueLocal'],
    [[PUBLIC_V4, PUBLIC_V6, '192.168.0.10'], 'private'],
  ];
  for (const [addresses, range] of cases) {
    const r = await checkTargetUrl('https://hooks.example.com/x', { lookup: resolvesTo(...addresses) });
    t.match(r, { ok: false, reason: 'forbidden_address', range }, `${addresses.join(', ')} refused as ${range}`);
  }
  const ok = await checkTargetUrl('https://hooks.example.com/x', { lookup: resolvesTo(PUBLIC_V4, PUBLIC_V6) });
  t.match(ok, { ok: true });
  t.same(ok.ok && ok.addresses.map((a) => a.address), [PUBLIC_V4, PUBLIC_V6]);
});

t.test('DNS failures are reported as dns', async (t) => {
  const notFound: LookupFn = async (host) => {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  };
  t.match(await checkTargetUrl('https://nope.example.com/', { lookup: notFound }), { ok: false, reason: 'dns' });
  t.match(await checkTargetUrl('https://empty.example.com/', { lookup: async () => [] }), { ok: false, reason: 'dns' });
  const hang: LookupFn = () => new Promise(() => undefined);
  t.match(await checkTargetUrl('https://slow.example.com/', { lookup: hang, dnsTimeoutMs: 50 }), { ok: false, reason: 'dns' });
  // the real resolver: .invalid never resolves (RFC 6761)
  t.match(await checkTargetUrl('https://does-not-exist.invalid/'), { ok: false, reason: 'dns' });
});

t.test('allowPrivate: local http receivers, and nothing more', async (t) => {
  const local = 'http://127.0.0.1:8080/hooks';
  t.match(await checkTargetUrl(local, { lookup: noLookup }), { ok: false, reason: 'scheme' }, 'http refused without the switch');
  t.match(await checkTargetUrl('https://127.0.0.1:8080/hooks', { lookup: noLookup }), { ok: false, reason: 'forbidden_address', range: 'loopback' });
  t.match(await checkTargetUrl(local, { lookup: noLookup, allowPrivate: true }), { ok: true });
  t.match(await checkTargetUrl('http://[::1]:8080/', { lookup: noLookup, allowPrivate: true }), { ok: true });
  t.match(await checkTargetUrl('http://192.168.1.20/', { lookup: noLookup, allowPrivate: true }), { ok: true });
  t.match(await checkTargetUrl('http://localhost:3000/', { lookup: resolvesTo('127.0.0.1', '::1'), allowPrivate: true }), { ok: true });
  t.match(await checkTargetUrl('http://host.docker.internal:3000/', { lookup: resolvesTo('172.17.0.1'), allowPrivate: true }), { ok: true });
  // still refused with the switch
  t.match(await checkTargetUrl('http://169.254.169.254/', { lookup: noLookup, allowPrivate: true }), { ok: false, range: 'metadata' });
  t.match(await checkTargetUrl('http://metadata.google.internal/', { lookup: noLookup, allowPrivate: true }), { ok: false, range: 'metadata' });
  t.match(await checkTargetUrl('http://sneaky.example.com/', { lookup: resolvesTo('169.254.169.254'), allowPrivate: true }), { ok: false, range: 'metadata' });
  t.match(await checkTargetUrl('http://0.0.0.0:8080/', { lookup: noLookup, allowPrivate: true }), { ok: false, range: 'unspecified' });
  t.match(await checkTargetUrl('ftp://127.0.0.1/', { lookup: noLookup, allowPrivate: true }), { ok: false, reason: 'scheme' });
});

t.test('WEBHOOKS_ALLOW_PRIVATE_TARGETS: read under its exact name, ignored in production', async (t) => {
  t.equal(allowPrivateTargets(loadConfig({})), false, 'off by default');
  t.equal(allowPrivateTargets(loadConfig({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' })), true);
  t.equal(allowPrivateTargets(loadConfig({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', AULA_ENV: 'test' })), true);
  t.equal(allowPrivateTargets(loadConfig({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'false' })), false);
  t.equal(allowPrivateTargets(loadConfig({ AULA_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' })), false, 'not under our prefix');
  const prod = loadConfig({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', AULA_ENV: 'production', AULA_SECRET_KEY: 'x'.repeat(32), AULA_MEDIA_ANNOUNCED_ADDRESS: '203.0.113.7' });
  t.equal(prod.WEBHOOKS_ALLOW_PRIVATE_TARGETS, true, 'parsed');
  t.equal(allowPrivateTargets(prod), false, 'but ignored in production');
  const allowPrivate = allowPrivateTargets(prod);
  t.match(await checkTargetUrl('http://127.0.0.1:8080/', { lookup: noLookup, allowPrivate }), { ok: false, reason: 'scheme' });
  t.throws(() => loadConfig({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'maybe' }), /WEBHOOKS_ALLOW_PRIVATE_TARGETS/);
});

t.test('classifyAddress', async (t) => {
  t.match(classifyAddress('8.8.8.8'), { allowed: true, range: 'unicast', address: '8.8.8.8' });
  t.match(classifyAddress('0177.0.0.1'), { allowed: false, range: 'loopback', address: '127.0.0.1' }, 'inet_aton spellings too');
  t.match(classifyAddress('2130706433'), { allowed: false, range: 'loopback' });
  t.match(classifyAddress('[::1]'), { allowed: false, range: 'loopback' });
  t.match(classifyAddress('fe80::1%eth0'), { allowed: false, range: 'linkLocal' });
  t.match(classifyAddress('::ffff:8.8.8.8'), { allowed: true, range: 'unicast', embedded: { via: 'ipv4Mapped', address: '8.8.8.8' } });
  t.match(classifyAddress('::ffff:10.0.0.1'), { allowed: false, range: 'private', embedded: { via: 'ipv4Mapped', address: '10.0.0.1' } });
  t.match(classifyAddress('64:ff9b::808:808'), { allowed: true, embedded: { via: 'nat64', address: '8.8.8.8' } });
  t.match(classifyAddress('64:ff9b::a9fe:a9fe'), { allowed: false, range: 'metadata', embedded: { via: 'nat64', address: '169.254.169.254' } });
  t.match(classifyAddress('2002:a9fe:a9fe::'), { allowed: false, range: 'metadata', embedded: { via: '6to4', address: '169.254.169.254' } });
  // Teredo: 2001:0:<server>:<flags>:<port>:<client XOR ffff:ffff>; client 192.168.0.1 obfuscated is 3f57:fffe
  t.match(classifyAddress('2001:0:808:808:0:0:3f57:fffe'), { allowed: false, range: 'private', embedded: { via: 'teredo', address: '192.168.0.1' } });
  t.match(classifyAddress('::ffff:127.0.0.1', { allowPrivate: true }), { allowed: true, range: 'loopback' });
  t.match(classifyAddress('fd00::1', { allowPrivate: true }), { allowed: true, range: 'uniqueLocal' });
  t.match(classifyAddress('fd00:ec2::254', { allowPrivate: true }), { allowed: false, range: 'metadata' });
  t.match(classifyAddress('fe80::1', { allowPrivate: true }), { allowed: false, range: 'linkLocal' });
  t.match(classifyAddress('not-an-ip'), { allowed: false, range: 'invalid' });
  t.match(classifyAddress(''), { allowed: false, range: 'invalid' });
});

t.test('checkTargetSyntax never resolves, and resolveVetted names the bad address', async (t) => {
  t.match(checkTargetSyntax('https://example.com/'), { ok: true, host: 'example.com', literal: null });
  t.match(checkTargetSyntax('https://[::ffff:7f00:1]/'), { ok: false, range: 'loopback' });
  await t.rejects(resolveVetted('evil.example.com', { lookup: resolvesTo(PUBLIC_V4, '127.0.0.1') }), { code: 'ERR_AULA_SSRF', range: 'loopback', address: '127.0.0.1' });
  await t.rejects(resolveVetted('localhost', { lookup: noLookup }), { code: 'ERR_AULA_SSRF', range: 'loopback' });
  t.match(await resolveVetted('ok.example.com', { lookup: resolvesTo(PUBLIC_V4) }), [{ allowed: true, address: PUBLIC_V4 }]);
});
