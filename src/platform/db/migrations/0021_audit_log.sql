-- The console's API keys and audit log (docs/console-api.md).
--
-- API keys can be rolled: the new key keeps the name and scopes, the old one gets expires_at (now, or up
-- to 7 days ahead) and points at its successor. last_used_at is written coarsely: at most once a minute
-- per key and node, batched off the request path (src/services/api-keys.ts).
alter table api_keys add column expires_at timestamptz;
alter table api_keys add column last_used_at timestamptz;
alter table api_keys add column rolled_from text references api_keys (id);
alter table api_keys add column replaced_by text references api_keys (id);
-- the console's listing: an organization's keys, newest first
create index api_keys_org_id on api_keys (org_id, id desc);

-- Who changed what in an organization, written in the transaction of the change (or, for a change an
-- actor commits, such as ending a room or disabling a webhook endpoint, right after it acknowledged it).
-- actor_type: an owner or admin (actor_id the admin's id, actor_email as it was then), the operator's
-- CLI (no id), or an API key (actor_id the key's id) for changes made on the API-key surface.
-- details never holds a secret: no key, no webhook secret, no webhook URL's path or query.
create table audit_log (
  id text primary key,
  org_id text not null references organizations (id),
  at timestamptz not null,
  actor_type text not null check (actor_type in ('admin', 'operator', 'api_key')),
  actor_id text,
  actor_email text,
  action text not null,
  target_type text not null,
  target_id text,
  details jsonb not null default '{}',
  request_id text
);
create index audit_log_org on audit_log (org_id, id desc);
create index audit_log_org_action on audit_log (org_id, action, id desc);
create index audit_log_org_actor on audit_log (org_id, actor_id, id desc);
