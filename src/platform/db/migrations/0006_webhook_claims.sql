-- Claiming due webhook messages walks, per owned shard, the endpoints that have pending messages and
-- takes at most a few due messages of each (a loose index scan): its cost follows the number of
-- endpoints, not the size of a backlog, and one endpoint's backlog cannot starve another's.
create index webhook_messages_pending on webhook_messages (shard, endpoint_id, next_attempt_at) where status = 'PENDING';
drop index webhook_messages_due;
