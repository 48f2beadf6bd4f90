import type { Db, Tx } from '../db/index.ts';
import { iso } from '../../core/clock.ts';
import { applyPatch, deepFreeze, diff, jsonEqual, type Json, type PatchOp } from './json-patch.ts';

/**
 * An actor's persisted state: the snapshot row (`actor_snapshots`, the whole XState persisted snapshot as
 * of its `seq`) and the delta rows after it (`actor_deltas`, one JSON Patch per transition, numbered on
 * from the snapshot's seq). Loading applies the deltas in order; a transition writes its delta; a
 * compaction writes the whole state into the snapshot row and deletes the deltas, in one transaction.
 * Migration 0017 says why; docs/live-rooms.md, "Actor snapshots", how it behaves.
 */

/**
 * Compact when this many deltas follow the snapshot, or sooner when they add up to as many bytes as the
 * snapshot itself. Measured (bench/state-deltas.ts --database; bench/README.md, "The meeting's state"):
 * a join in a room of 500 writes 1.1 KiB of WAL with 50, 949 B with 200, 12 KiB with whole snapshots;
 * past 50 little is saved while a load reads up to that many rows. The byte rule bounds a load to twice
 * the snapshot whatever the deltas hold (a small actor, a large change).
 */
export const COMPACT_EVERY = 50;

/** What loading found: the state, its version, and where its numbering stands. */
export interface StoredActor {
  machineVersion: number;
  /** null when the snapshot is of another machine version than the one asked for (its deltas are not read). */
  state: Json | null;
  /** The seq of the newest transition in `state` (the last delta's, or the snapshot's). */
  seq: number;
  snapshotSeq: number;
  snapshotBytes: number;
  deltaBytes: number;
}

/**
 * The actor's state as Postgres holds it: its snapshot with every delta after it applied in order; null
 * when it has no snapshot row. With `version`, a snapshot of another machine version comes back without
 * its state (the actor is rebuilt from its row, and its deltas are dropped at its first write). Throws
 * when the deltas do not follow each other (a gap would mean a lost transition: better no actor than a
 * wrong one).
 */
export async function readActorState(db: Db, actorId: string, version?: number): Promise<StoredActor | null> {
  const [row] = await db<{ machineVersion: number; snapshot: string; seq: string }[]>`
    select machine_version, snapshot::text as snapshot, seq::text as seq from actor_snapshots where actor_id = ${actorId}`;
  if (!row) return null;
  const snapshotSeq = Number(row.seq);
  if (version !== undefined && row.machineVersion !== version) {
    return { machineVersion: row.machineVersion, state: null, seq: snapshotSeq, snapshotSeq, snapshotBytes: row.snapshot.length, deltaBytes: 0 };
  }
  const deltas = await db<{ seq: string; patch: string }[]>`
    select seq::text as seq, patch::text as patch from actor_deltas where actor_id = ${actorId} and seq > ${snapshotSeq} order by actor_deltas.seq`;
  let state = JSON.parse(row.snapshot) as Json;
  let seq = snapshotSeq;
  let deltaBytes = 0;
  for (const d of deltas) {
    if (Number(d.seq) !== seq + 1) throw new Error(`${actorId}: delta ${d.seq} follows ${seq}; a transition is missing`);
    state = applyPatch(state, JSON.parse(d.patch) as PatchOp[]);
    seq++;
    deltaBytes += d.patch.length;
  }
  return { machineVersion: row.machineVersion, state, seq, snapshotSeq, snapshotBytes: row.snapshot.length, deltaBytes };
}

/** Where one actor's rows go. */
export interface ActorKey {
  actorId: string;
  /** The definition's name (the column `kind`). */
  kind: string;
  shard: number;
  version: number;
}

/** One transition's write, planned before its transaction and taken in by `ActorState` once it commits. */
export type StateWrite =
  | { kind: 'none'; next: unknown }
  | { kind: 'delta'; seq: number; text: string; next: unknown }
  | { kind: 'snapshot'; seq: number; text: string; next: unknown };

/**
 * What the database holds of one actor, kept by the runtime beside the actor: the persisted snapshot as
 * last written (the object XState made, its context frozen so that the next diff may skip what did not
 * change: json-patch.ts) and where the numbering stands.
 */
export class ActorState {
  /** null: the next write is a whole snapshot (a fresh or rebuilt actor, or one whose restored snapshot did not read back the same). */
  #persisted: unknown;
  #seq: number;
  #snapshotSeq: number;
  #snapshotBytes: number;
  #deltaBytes: number;

  /**
   * From what `readActorState` found (none, or none of this version: a fresh or rebuilt actor) and the
   * actor made from it, started.
   */
  constructor(stored: StoredActor | null, actor: { getPersistedSnapshot(): unknown }) {
    this.#seq = stored?.seq ?? 0;
    this.#snapshotSeq = stored?.snapshotSeq ?? 0;
    this.#snapshotBytes = stored?.snapshotBytes ?? 0;
    this.#deltaBytes = stored?.deltaBytes ?? 0;
    const restored = actor.getPersistedSnapshot();
    freezeContext(restored);
    // the next delta must apply to what the database holds: if XState restored anything differently, write it all
    this.#persisted = stored?.state && jsonEqual(restored, stored.state) ? restored : null;
  }

  /** Deltas written since the snapshot row (0: the row holds everything). */
  get pending(): number {
    return this.#seq - this.#snapshotSeq;
  }

  /**
   * The write for a transition that left the actor with `snapshot` (its `getPersistedSnapshot()`): nothing
   * when nothing changed, else a delta, or the whole snapshot when `compact` says so, when the database
   * holds no snapshot of this version, or by COMPACT_EVERY's rule.
   */
  plan(snapshot: unknown, compact: boolean): StateWrite {
    freezeContext(snapshot);
    const seq = this.#seq + 1;
    if (this.#persisted === null || compact) return { kind: 'snapshot', seq, text: JSON.stringify(snapshot), next: snapshot };
    const ops = diff(this.#persisted, snapshot);
    if (!ops.length) return { kind: 'none', next: snapshot };
    const text = JSON.stringify(ops);
    if (this.pending + 1 >= COMPACT_EVERY || this.#deltaBytes + text.length >= this.#snapshotBytes) return { kind: 'snapshot', seq, text: JSON.stringify(snapshot), next: snapshot };
    return { kind: 'delta', seq, text, next: snapshot };
  }

  /** The whole state as persisted now, for a compaction outside a transition (passivation, hand-over); nothing when no delta is pending. */
  planCompaction(): StateWrite {
    if (this.#persisted === null || this.pending === 0) return { kind: 'none', next: this.#persisted };
    return { kind: 'snapshot', seq: this.#seq, text: JSON.stringify(this.#persisted), next: this.#persisted };
  }

  /** Takes in a write that committed. */
  committed(w: StateWrite): void {
    this.#persisted = w.next;
    if (w.kind === 'none') return;
    this.#seq = w.seq;
    if (w.kind === 'delta') this.#deltaBytes += w.text.length;
    else {
      this.#snapshotSeq = w.seq;
      this.#snapshotBytes = w.text.length;
      this.#deltaBytes = 0;
    }
  }
}

/**
 * Freezes a persisted snapshot's context (XState asks machines never to change their context in place;
 * frozen, one that does throws instead of going unpersisted). What is frozen already is not walked again.
 */
function freezeContext(snapshot: unknown): void {
  deepFreeze((snapshot as { context?: unknown } | null)?.context);
}

/** Carries out `w` in the caller's transaction (which has checked the shard's epoch). */
export async function writeState(tx: Tx, key: ActorKey, w: StateWrite, at: number): Promise<void> {
  if (w.kind === 'delta') {
    await tx`insert into actor_deltas (actor_id, seq, shard, patch) values (${key.actorId}, ${w.seq}, ${key.shard}, ${w.text}::text::jsonb)`;
  } else if (w.kind === 'snapshot') {
    // the column `kind` holds the definition's name (renaming it would break nodes of the previous release mid-upgrade)
    await tx`insert into actor_snapshots (actor_id, kind, shard, machine_version, snapshot, seq, updated_at)
      values (${key.actorId}, ${key.kind}, ${key.shard}, ${key.version}, ${w.text}::text::jsonb, ${w.seq}, ${iso(at)})
      on conflict (actor_id) do update set snapshot = excluded.snapshot, machine_version = excluded.machine_version,
        shard = excluded.shard, seq = excluded.seq, updated_at = excluded.updated_at`;
    // every delta, also those of another machine version that a rebuild left behind
    await tx`delete from actor_deltas where actor_id = ${key.actorId}`;
  }
}
