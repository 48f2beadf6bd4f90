-- Actor snapshots and durable timers. Each row carries its shard so the owning member finds its own,
-- and every write to them is fenced by the shard's epoch (src/cluster/fencing.ts).

create table actor_snapshots (
  actor_id text primary key,
  kind text not null,
  shard integer not null,
  machine_version integer not null,
  snapshot jsonb not null,
  updated_at timestamptz not null
);
create index actor_snapshots_shard on actor_snapshots (shard);

-- Absolute deadlines: XState delays are not restored from snapshots, so every deadline is a row.
create table actor_timers (
  actor_id text not null,
  name text not null,
  shard integer not null,
  due_at timestamptz not null,
  primary key (actor_id, name)
);
create index actor_timers_due on actor_timers (shard, due_at);

-- The waiting room is an actor now; a session remembers its queue entry.
alter table meeting_sessions add column queue_id text;
drop table waiting_room_entries;
