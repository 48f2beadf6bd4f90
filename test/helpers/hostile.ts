import fc from 'fast-check';
import type { z } from 'zod';

/**
 * Hostile values for property tests: what has broken servers before (NUL, lone surrogates, year 0000,
 * huge and odd numbers, injection strings, deep nesting, wrong types), mixed into values shaped by a
 * route's zod schema so that requests get past the first checks and reach the ones deeper in.
 */

const deep = (n: number): unknown => (n === 0 ? 'x' : { a: deep(n - 1) });

const nastyStrings = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\udc00\ud800', '\u202eRTL', '😀', 'ǅ', '\r\n', 'null', 'undefined', 'true', '[]', '{}',
  '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '9999-12-31T23:59:59-14:00', '2026-02-30T00:00:00Z', '1970-01-01T00:00:00Z',
  '-1', '0', '1e308', 'NaN', 'Infinity', '9007199254740993', '0x10', "' OR 1=1 --", '"; drop table users; --', '../../etc/passwd', '%00', '%', '__proto__',
  'constructor', 'x'.repeat(5000), 'https://', 'https://127.0.0.1/', 'http://[::1]/', 'javascript:alert(1)', 'aula_sk_' + 'A'.repeat(43),
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...nastyStrings), fc.string({ unit: 'binary', maxLength: 40 }));

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.integer(),
  fc.constantFrom(-1, 0, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, -0, 0.5),
  fc.boolean(),
  fc.constant(null),
  fc.constant([]),
  fc.constant({}),
  fc.constant(deep(40)),
  fc.constant({ __proto__: { admin: true } }),
  fc.array(hostileString, { maxLength: 3 }),
);

type Def = { type: string; [k: string]: any };
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** A value for `schema`, each part of it valid-looking most of the time and hostile otherwise. */
export function shapedBy(schema: z.ZodType, depth = 0): fc.Arbitrary<unknown> {
  const plausible = plausibleFor(schema, depth);
  return fc.oneof({ weight: 3, arbitrary: plausible }, { weight: 1, arbitrary: hostileValue });
}

function plausibleFor(schema: z.ZodType, depth: number): fc.Arbitrary<unknown> {
  const d = defOf(schema);
  switch (d.type) {
    case 'object': {
      const shape = d.shape as Record<string, z.ZodType>;
      const entries = Object.entries(shape).map(([k, v]) => [k, shapedBy(v, depth + 1)] as const);
      const record = fc.record(Object.fromEntries(entries), { requiredKeys: [] });
      return fc.oneof({ weight: 4, arbitrary: record }, { weight: 1, arbitrary: record.map((r) => ({ ...r, unexpected: 'field' })) });
    }
    case 'string':
      if (d.format === 'datetime') return fc.oneof(fc.date({ min: new Date('1000-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((x) => x.toISOString()), hostileString);
      if (d.format === 'url') return fc.oneof(fc.webUrl(), hostileString);
      if (d.format === 'email') return fc.oneof(fc.emailAddress(), hostileString);
      return fc.oneof(fc.string({ maxLength: 30 }), hostileString);
    case 'number':
      return fc.oneof(fc.integer({ min: -10, max: 2000 }), fc.double());
    case 'bigint':
      return fc.bigInt();
    case 'boolean':
      return fc.boolean();
    case 'enum':
      return fc.constantFrom(...Object.values(d.entries as Record<string, string>));
    case 'literal':
      return fc.constantFrom(...(d.values as unknown[]));
    case 'array':
      return depth > 4 ? fc.constant([]) : fc.array(shapedBy(d.element, depth + 1), { maxLength: 4 });
    case 'record':
      return fc.dictionary(fc.string({ maxLength: 10 }), shapedBy(d.valueType, depth + 1), { maxKeys: 3 });
    case 'optional':
      return fc.option(plausibleFor(d.innerType, depth), { nil: undefined });
    case 'nullable':
      return fc.option(plausibleFor(d.innerType, depth), { nil: null });
    case 'default':
    case 'prefault':
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      return fc.option(plausibleFor(d.innerType, depth), { nil: undefined });
    case 'union':
      return fc.oneof(...(d.options as z.ZodType[]).map((o) => plausibleFor(o, depth)));
    case 'pipe':
      return plausibleFor(d.in, depth);
    case 'lazy':
      return depth > 4 ? fc.constant(null) : plausibleFor(d.getter(), depth + 1);
    default:
      return hostileValue;
  }
}

/** Query strings carry text: every value becomes a string (arrays and objects as JSON). */
export function asQuery(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    q.set(k, typeof v === 'string' ? v : JSON.stringify(v) ?? '');
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
