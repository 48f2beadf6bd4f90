/**
 * The difference between two JSON values as a JSON Patch (RFC 6902: `add`, `remove`, `replace`, with JSON
 * Pointer paths, RFC 6901), and a patch applied. The actor runtime persists each transition's patch
 * between the snapshot it persisted last and the new one (actor-state.ts).
 *
 * `diff` takes the values as they are in memory and compares them as `JSON.stringify` would write them:
 * a member whose value is `undefined` or a function is absent, `undefined` in an array is `null`, `toJSON`
 * is called. Objects are compared key by key. An array keeps its common head and tail and diffs what lies
 * between element by element, then adds or removes the rest, so an append, a removal or an insertion
 * anywhere (an anonymous poll's sorted answers) is one operation.
 *
 * The one trick for speed: an object that is frozen and is the same object on both sides is not walked,
 * since it cannot have changed. The runtime freezes each snapshot's context after its transition (deepFreeze,
 * which stops at what is frozen already), and XState's `assign` builds a new object for what changes and
 * keeps the rest, so a transition's diff walks only what it changed. Without it, the whole snapshot went
 * through JSON and was walked on every transition: 4 to 6 times the cost of the
 * `JSON.stringify` the runtime made before deltas (bench/state-deltas.ts; bench/README.md, "The meeting's
 * state: deltas instead of whole snapshots"). Written here rather than taken from fast-json-patch or
 * rfc6902 for the same reason (measured there too).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export type PatchOp = { op: 'add'; path: string; value: Json } | { op: 'replace'; path: string; value: Json } | { op: 'remove'; path: string };

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const escape = (key: string): string => (key.includes('~') || key.includes('/') ? key.replaceAll('~', '~0').replaceAll('/', '~1') : key);
const unescape = (token: string): string => (token.includes('~') ? token.replaceAll('~1', '/').replaceAll('~0', '~') : token);

/** What JSON.stringify writes for a member or element: toJSON applied; undefined for what it leaves out. */
function json(v: unknown): unknown {
  if (typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function') return (v as { toJSON(): unknown }).toJSON();
  if (typeof v === 'function' || typeof v === 'symbol') return undefined;
  if (typeof v === 'number' && !Number.isFinite(v)) return null;
  return v;
}

/** A plain JSON copy of `v` (an element: undefined becomes null). */
const copy = (v: unknown): Json => (v === undefined ? null : (JSON.parse(JSON.stringify(v)) as Json));

/** Unchanged for sure: the same primitive, or the same frozen object. */
const same = (a: unknown, b: unknown): boolean => a === b && (typeof a !== 'object' || a === null || Object.isFrozen(a));

/** Freezes `v` and everything in it, stopping at what is frozen already (so only what is new is walked). */
export function deepFreeze(v: unknown): void {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
}

/** Deep equality of two values as JSON (key order aside). */
export function jsonEqual(x: unknown, y: unknown): boolean {
  if (same(x, y)) return true;
  const a = json(x);
  const b = json(y);
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i] === undefined ? null : a[i], b[i] === undefined ? null : b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = members(a as Obj);
  const kb = members(b as Obj);
  if (ka.length !== kb.length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !jsonEqual((a as Obj)[k], (b as Obj)[k])) return false;
  return true;
}

/** The keys JSON.stringify writes. */
function members(o: Obj): string[] {
  const out: string[] = [];
  for (const k of Object.keys(o)) if (json(o[k]) !== undefined) out.push(k);
  return out;
}
const has = (o: Obj, k: string): boolean => Object.hasOwn(o, k) && json(o[k]) !== undefined;

/** The operations that turn `from` into `to`, in the order they apply. */
export function diff(from: unknown, to: unknown): PatchOp[] {
  const ops: PatchOp[] = [];
  walk(from, to, '', ops);
  return ops;
}

function walk(x: unknown, y: unknown, path: string, ops: PatchOp[]): void {
  if (same(x, y)) return;
  const a = json(x);
  const b = json(y);
  if (isObject(a) && isObject(b)) {
    for (const k of members(a)) if (!has(b, k)) ops.push({ op: 'remove', path: `${path}/${escape(k)}` });
    for (const k of members(b)) {
      if (has(a, k)) walk(a[k], b[k], `${path}/${escape(k)}`, ops);
      else ops.push({ op: 'add', path: `${path}/${escape(k)}`, value: copy(b[k]) });
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    walkArray(a, b, path, ops);
    return;
  }
  if (!jsonEqual(a, b)) ops.push({ op: 'replace', path, value: copy(b) });
}

function walkArray(a: unknown[], b: unknown[], path: string, ops: PatchOp[]): void {
  const el = (v: unknown) => (v === undefined ? null : v);
  let head = 0;
  const shorter = Math.min(a.length, b.length);
  while (head < shorter && jsonEqual(el(a[head]), el(b[head]))) head++;
  let tail = 0;
  while (tail < shorter - head && jsonEqual(el(a[a.length - 1 - tail]), el(b[b.length - 1 - tail]))) tail++;
  const aMid = a.length - tail - head;
  const bMid = b.length - tail - head;
  const paired = Math.min(aMid, bMid);
  for (let i = head; i < head + paired; i++) walk(el(a[i]), el(b[i]), `${path}/${i}`, ops);
  for (let i = head + paired; i < head + bMid; i++) ops.push({ op: 'add', path: `${path}/${i}`, value: copy(b[i]) });
  // each removal shifts what follows: removing at the same index takes the next one
  for (let i = paired; i < aMid; i++) ops.push({ op: 'remove', path: `${path}/${head + paired}` });
}

/**
 * Applies `ops` to `doc` in place (containers are changed; a root replace returns the new root) and
 * returns the document. Values are inserted as they are, not copied. Throws on a path that does not
 * exist, as RFC 6902 asks: a patch that does not fit its document is never applied halfway silently.
 */
export function applyPatch(doc: Json, ops: readonly PatchOp[]): Json {
  let root = doc;
  for (const op of ops) {
    if (op.path === '') {
      if (op.op === 'remove') throw new Error('json-patch: cannot remove the root');
      root = op.value;
      continue;
    }
    const tokens = op.path.split('/').slice(1).map(unescape);
    const last = tokens.pop()!;
    let parent: Json = root;
    for (const t of tokens) {
      const next: Json | undefined = Array.isArray(parent) ? parent[index(t, parent.length - 1, op.path)] : isObject(parent) && Object.hasOwn(parent, t) ? parent[t] : undefined;
      if (next === undefined) throw new Error(`json-patch: no ${op.path}`);
      parent = next;
    }
    if (Array.isArray(parent)) {
      if (op.op === 'add') {
        if (last === '-') parent.push(op.value);
        else parent.splice(index(last, parent.length, op.path), 0, op.value);
      } else if (op.op === 'replace') parent[index(last, parent.length - 1, op.path)] = op.value;
      else parent.splice(index(last, parent.length - 1, op.path), 1);
    } else if (isObject(parent)) {
      if (op.op !== 'add' && !Object.hasOwn(parent, last)) throw new Error(`json-patch: no ${op.path}`);
      if (op.op === 'remove') delete parent[last];
      else if (last === '__proto__') Object.defineProperty(parent, last, { value: op.value, writable: true, enumerable: true, configurable: true });
      else parent[last] = op.value;
    } else {
      throw new Error(`json-patch: no ${op.path}`);
    }
  }
  return root;
}

function index(token: string, max: number, path: string): number {
  const i = /^(0|[1-9][0-9]*)$/.test(token) ? Number(token) : NaN;
  if (!(i >= 0 && i <= max)) throw new Error(`json-patch: no ${path}`);
  return i;
}
