// The README's receiver example, run as it is written (only its import path and port adjusted): a
// signed delivery is accepted once, a replay is deduplicated, a bad signature gets 400.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { ulid } from '../../src/platform/ids.ts';
import { newSecret, signatureHeaders } from '../../src/services/webhooks/signing.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('## Receiving webhooks'));
const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];

t.test('the README receiver example verifies, deduplicates and refuses', async (t) => {
  t.ok(code, 'the README has the example');
  const dir = mkdtempSync(join(tmpdir(), 'aula-readme-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((r) => srv.close(r));
  const file = join(dir, 'receiver.ts');
  writeFileSync(file, code!.replace("'./verify.ts'", JSON.stringify(join(root, 'src/services/webhooks/verify.ts'))).replace('.listen(3000)', `.listen(${port}, '127.0.0.1')`));
  const secret = newSecret();
  const proc = spawn(process.execPath, ['--import', 'tsx', file], { cwd: root, env: { ...process.env, AULA_WEBHOOK_SECRET: secret }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    proc.kill('SIGKILL');
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));

  const id = `evt_${ulid()}`;
  const body = JSON.stringify({ id, type: 'meeting.started', createdAt: new Date().toISOString(), organizationId: 'org_1', data: { meetingId: 'mtg_1' } });
  const headers = signatureHeaders({ eventId: id, timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] });
  const post = async (h: Record<string, string>) => {
    for (let i = 0; ; i++) {
      try {
        return await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers: h, body });
      } catch (err) {
        if (i > 100) throw new Error(`the example did not start: ${out}`, { cause: err });
        await sleep(100);
      }
    }
  };
  t.equal((await post(headers)).status, 204, 'a signed delivery is accepted');
  t.equal((await post(headers)).status, 204, 'a replay is accepted too');
  const bad = await post({ ...headers, 'Svc-Signature': `v1=${'0'.repeat(64)}` });
  t.equal(bad.status, 400, 'a wrong signature gets 400');
  t.equal(await bad.text(), 'signature_mismatch');
  const old = signatureHeaders({ eventId: id, timestamp: Math.floor(Date.now() / 1000) - 301, body, secrets: [secret] });
  t.equal((await post(old)).status, 400, 'a timestamp past 5 minutes gets 400');
  t.equal(out.trim().split('\n').filter((l) => l.startsWith('meeting.started')).length, 1, 'the event is handled once');
});
