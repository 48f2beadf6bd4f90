import { readFileSync } from 'node:fs';
import t from 'tap';
import { fullPath } from '../http/route.ts';
import { routes } from '../http/routes/index.ts';
import { errorCatalog, type ErrorCode } from '../src/core/errors.ts';

const doc = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');

/** The error catalog's row of `code` in docs/api.md, split into its cells (code, HTTP, retry, meaning). */
function catalogRow(code: string): string[] | null {
  const line = doc.split('\n').find((l) => l.startsWith('|') && l.includes(`\`${code}\``));
  return line ? line.split('|').slice(1, -1).map((c) => c.trim()) : null;
}

/**
 * The spec's client retry guidance, as one rule: back off and retry 5xx, wait Retry-After on 429, and of
 * the other 4xx retry only 408 and 409 idempotency_in_progress.
 */
const specRetries = (code: ErrorCode, status: number) => status >= 500 || status === 429 || status === 408 || code === 'idempotency_in_progress';

t.test('docs/api.md documents every route and every error code', async (t) => {
  for (const r of routes) t.ok(doc.includes(`\`${fullPath(r.spec)}\``), `${r.spec.method.toUpperCase()} ${fullPath(r.spec)}`);
  for (const [code, { status }] of Object.entries(errorCatalog)) {
    const row = catalogRow(code);
    t.ok(row, `${code} is documented`);
    t.equal(row?.[1], String(status), `${code} with status ${status}`);
  }
});

t.test('one retry rule: the catalog\'s retryable flags, the table\'s retry column and the guidance agree with the spec', async (t) => {
  for (const [code, entry] of Object.entries(errorCatalog) as [ErrorCode, { status: number; retryable?: boolean }][]) {
    const retryable = entry.retryable === true;
    t.equal(retryable, specRetries(code, entry.status), `${code} (${entry.status}) is ${specRetries(code, entry.status) ? '' : 'not '}retryable in the catalog`);
    t.equal(catalogRow(code)?.[2], retryable ? 'yes' : '', `${code}: the table's retry column says what the catalog does`);
  }
  const guidance = doc.split('\n\n').find((p) => p.startsWith('Client retry guidance'));
  t.ok(guidance, 'the guidance is there');
  for (const named of ['408', '429', '5xx', '`idempotency_in_progress`', 'Retry-After']) t.ok(guidance?.includes(named), `the guidance names ${named}`);
});
