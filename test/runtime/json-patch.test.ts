import fc from 'fast-check';
import t from 'tap';
import { applyPatch, diff, jsonEqual, type Json } from '../../src/platform/runtime/json-patch.ts';

// The runtime's deltas: diff() gives the RFC 6902 operations that turn one JSON document into another, and
// applyPatch() applied to a copy of the first gives the second, for any two documents.
const clone = (v: Json): Json => JSON.parse(JSON.stringify(v)) as Json;
/** A copy of `list` with `insert` put at `at` after removing `remove` elements there. */
const spliced = <T>(list: T[], at: number, remove: number, ...insert: T[]): T[] => {
  const out = [...list];
  out.splice(at, remove, ...insert);
  return out;
};
const key = fc.oneof(fc.constantFrom('a', 'b', 'c', 'par_1', '~', '/', 'a/b~c', '', '0', '__proto__'), fc.string({ maxLength: 4 }));
const json: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.string({ maxLength: 6 }),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(key, tie('v'), { maxKeys: 5 }),
  ),
})).v;

t.test('diff() then applyPatch() turns any document into any other', async (t) => {
  fc.assert(
    fc.property(json, json, (a, b) => {
      const ops = diff(a, b);
      const out = applyPatch(clone(a), JSON.parse(JSON.stringify(ops)));
      return jsonEqual(out, b);
    }),
    { numRuns: 3000 },
  );
  t.pass('3,000 random pairs');
});

t.test('diff() of a document and an edited copy: the edit, and it applies', async (t) => {
  // edits of the kinds the actors make: a field set, an element appended, inserted, removed, a key dropped
  fc.assert(
    fc.property(fc.array(fc.record({ id: fc.string({ maxLength: 3 }), n: fc.integer() }), { maxLength: 8 }), fc.nat(), fc.integer(), (list, at, n) => {
      const a: Json = { list, meta: { count: list.length } };
      const edits: Json[] = [
        { list: [...list, { id: 'new', n }], meta: { count: list.length + 1 } },
        { list: spliced(list, at % (list.length + 1), 0, { id: 'ins', n }), meta: { count: list.length + 1 } },
        { list: spliced(list, at % Math.max(1, list.length), 1), meta: { count: list.length } },
        { list, meta: {} },
      ];
      return edits.every((b) => jsonEqual(applyPatch(clone(a), diff(a, b)), b));
    }),
  );
  t.pass();
});

t.test('diff() writes one operation for an append, an insertion or a removal in an array', async (t) => {
  const people = Array.from({ length: 50 }, (_, i) => ({ id: `p${i}`, name: `Person ${i}` }));
  t.same(diff({ people }, { people: [...people, { id: 'p50', name: 'New' }] }), [{ op: 'add', path: '/people/50', value: { id: 'p50', name: 'New' } }]);
  t.same(diff({ people }, { people: spliced(people, 10, 0, { id: 'x', name: 'X' }) }), [{ op: 'add', path: '/people/10', value: { id: 'x', name: 'X' } }]);
  t.same(diff({ people }, { people: spliced(people, 3, 1) }), [{ op: 'remove', path: '/people/3' }]);
  t.same(diff({ people }, { people: people.map((p, i) => (i === 7 ? { ...p, name: 'Seven' } : p)) }), [{ op: 'replace', path: '/people/7/name', value: 'Seven' }]);
  t.same(diff({ a: { 'x/y': 1, 'm~n': 2 } }, { a: { 'x/y': 2 } }), [
    { op: 'remove', path: '/a/m~0n' },
    { op: 'replace', path: '/a/x~1y', value: 2 },
  ]);
  t.same(diff({ a: 1 }, { a: 1 }), [], 'nothing for equal documents');
});

t.test('applyPatch() refuses a path its document does not have', async (t) => {
  t.throws(() => applyPatch({ a: [] }, [{ op: 'replace', path: '/a/0', value: 1 }]), /no \/a\/0/);
  t.throws(() => applyPatch({ a: {} }, [{ op: 'remove', path: '/a/b' }]), /no \/a\/b/);
  t.throws(() => applyPatch({ a: 1 }, [{ op: 'add', path: '/b/c', value: 1 }]), /no \/b\/c/);
  t.same(applyPatch({ a: [1] }, [{ op: 'add', path: '/a/-', value: 2 }]), { a: [1, 2] });
  const o = applyPatch({}, [{ op: 'add', path: '/__proto__', value: { polluted: true } }]) as Record<string, unknown>;
  t.equal(Object.getPrototypeOf(o), Object.prototype, 'a key named __proto__ is a key, not the prototype');
  t.same(JSON.parse(JSON.stringify(o)), JSON.parse('{"__proto__":{"polluted":true}}'));
});
