-- An actor's transition writes what changed, not the whole snapshot (src/platform/runtime/actor-runtime.ts,
-- "deltas"): a JSON Patch against the state persisted before it, numbered per actor. The snapshot row holds
-- the state as of its seq; loading applies the deltas after it in order. Compaction writes the whole state
-- into the snapshot row and deletes the deltas, in the transaction of a transition (or of a passivation),
-- so it either happens whole or not at all. Every write is fenced by the shard's epoch like the snapshot's,
-- and the primary key refuses a second delta under the same number.
alter table actor_snapshots add column seq bigint not null default 0;

create table actor_deltas (
  actor_id text not null,
  seq bigint not null,
  shard integer not null,
  patch jsonb not null,
  primary key (actor_id, seq)
);
