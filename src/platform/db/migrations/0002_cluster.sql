-- Shard ownership epochs: the fencing tokens of the cluster. Redis leases say who routes a shard;
-- this row says whose writes count. A member that takes a shard bumps the epoch, and every actor
-- write checks it (`for share`) inside its own transaction, so a paused or partitioned former owner
-- commits nothing after the takeover. Redis never holds the counter: it would reset after data loss.

create table shards (
  id integer primary key check (id >= 0),
  epoch bigint not null default 0,
  -- the member that last bumped the epoch; null after a graceful release
  owner text,
  acquired_at timestamptz
);

-- SHARD_COUNT in src/cluster/cluster.ts; changing it needs a migration that re-seeds these rows.
insert into shards (id, epoch) select g, 0 from generate_series(0, 63) as g;
