import type { Db } from '../../src/platform/db/index.ts';
import { readActorState } from '../../src/platform/runtime/actor-state.ts';

/**
 * What Postgres holds of an actor: `state`, its snapshot with the deltas after it replayed (what the actor
 * loads), and `text`, the raw text of its snapshot row and of every delta row, where a name could hide.
 */
export async function actorRows(db: Db, actorId: string): Promise<{ state: any; text: string }> {
  const stored = await readActorState(db, actorId);
  if (!stored) throw new Error(`no state of ${actorId}`);
  const [snapshot] = await db<{ text: string }[]>`select snapshot::text as text from actor_snapshots where actor_id = ${actorId}`;
  const deltas = await db<{ text: string }[]>`select patch::text as text from actor_deltas where actor_id = ${actorId} order by seq`;
  return { state: stored.state, text: [snapshot!.text, ...deltas.map((d) => d.text)].join('\n') };
}

/** The transaction (xmin) that made the actor's newest write: its last delta, or its snapshot row when none follows it. */
export async function lastActorWrite(db: Db, actorId: string): Promise<string> {
  const [row] = await db<{ tx: string }[]>`
    select tx from (
      select xmin::text as tx, seq from actor_snapshots where actor_id = ${actorId}
      union all select xmin::text, seq from actor_deltas where actor_id = ${actorId}
    ) w order by seq desc limit 1`;
  return row!.tx;
}
