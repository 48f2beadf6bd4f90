import type { Db, Sql, Tx } from './index.ts';

const hooks = new WeakMap<object, (() => unknown)[]>();

/** Runs `fn` in a transaction and then the afterCommit hooks it registered. */
export async function transaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>): Promise<T> {
  let tx: Tx | undefined;
  const result = (await sql.begin((t) => {
    tx = t;
    hooks.set(t, []);
    return fn(t);
  })) as T;
  for (const h of hooks.get(tx!) ?? []) {
    try {
      await h();
    } catch {
      // hooks are notifications (cache invalidation, wake-ups); the commit already stands
    }
  }
  return result;
}

/** Joins the caller's transaction, or opens one when given the pool. */
export function inTx<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (hooks.has(db)) return fn(db as Tx);
  return transaction(db as Sql, fn);
}

/** The pool itself, not a transaction: a caller may reserve one of its connections. */
export function isPool(db: Db): db is Sql {
  return !hooks.has(db) && typeof (db as Partial<Sql>).reserve === 'function';
}

/** Runs `fn` once the surrounding transaction commits (at once when there is none); never if it rolls back. */
export function afterCommit(db: Db, fn: () => unknown): void {
  const list = hooks.get(db);
  if (list) list.push(fn);
  else void Promise.resolve().then(fn).catch(() => {});
}

/** A savepoint inside `tx`; its afterCommit hooks wait for the outer commit. */
export function savepoint<T>(tx: Tx, fn: (sp: Tx) => Promise<T>): Promise<T> {
  return tx.savepoint((sp) => {
    hooks.set(sp, hooks.get(tx) ?? []);
    return fn(sp as Tx);
  }) as Promise<T>;
}
