import { readFileSync } from 'node:fs';
import t from 'tap';
import { fullPath } from '../http/route.ts';
import { routes } from '../http/routes/index.ts';
import { errorCatalog } from '../src/core/errors.ts';

const doc = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');

t.test('docs/api.md documents every route and every error code', async (t) => {
  for (const r of routes) t.ok(doc.includes(`\`${fullPath(r.spec)}\``), `${r.spec.method.toUpperCase()} ${fullPath(r.spec)}`);
  for (const [code, { status }] of Object.entries(errorCatalog)) {
    const row = doc.split('\n').find((l) => l.startsWith('|') && l.includes(`\`${code}\``));
    t.ok(row, `${code} is documented`);
    t.match(row ?? '', new RegExp(`\\| ${status} \\|`), `${code} with status ${status}`);
  }
});
