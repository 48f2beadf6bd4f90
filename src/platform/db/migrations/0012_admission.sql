-- Who a live room lets in, as its meeting actor last committed it: a host locked it, or it holds as many
-- people as it allows. The exchange refuses newcomers on these (the actor decides again at the room join).
alter table meetings add column locked boolean not null default false;
alter table meetings add column at_capacity boolean not null default false;
create index meetings_live on meetings (org_id) where status = 'LIVE';
