-- Webhooks: endpoints, what each endpoint still has to be sent, the delivery log, and the in-app
-- notifications and emails that tell owners and admins about a disabled endpoint.

-- Events the background worker emits (plan-cap meeting.ended, transcript.ready, insights.ready) are
-- delivered even to organizations whose plan lacks webhooks.
alter table outbox add column background boolean not null default false;

create table webhook_endpoints (
  id text primary key,
  org_id text not null references organizations (id),
  url text not null,
  description text,
  -- event types, or {'*'} for every current and future type
  events text[] not null,
  status text not null check (status in ('ACTIVE', 'DISABLED')),
  -- why it is disabled: an admin (MANUAL), 3 days of failures (FAILING), or the receiver said 410 (GONE)
  disabled_reason text check (disabled_reason in ('MANUAL', 'FAILING', 'GONE')),
  disabled_at timestamptz,
  -- the first failure since the last success; null while deliveries succeed
  failing_since timestamptz,
  -- sealed with AES-256-GCM (src/crypto.ts Sealer, the data-at-rest key)
  secret_sealed bytea not null,
  previous_secret_sealed bytea,
  previous_secret_expires_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index webhook_endpoints_org on webhook_endpoints (org_id, id);

-- One row per event and endpoint: the event still to be sent (PENDING, due at next_attempt_at) or its
-- outcome. The endpoint actor's owner (the member owning `shard`) sends it; claimed_until keeps a row
-- from being sent twice at once.
create table webhook_messages (
  id text primary key,
  endpoint_id text not null references webhook_endpoints (id) on delete cascade,
  org_id text not null,
  event_id text not null references outbox (id) on delete cascade,
  shard integer not null,
  status text not null check (status in ('PENDING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null,
  claimed_until timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (endpoint_id, event_id)
);
create index webhook_messages_due on webhook_messages (shard, next_attempt_at) where status = 'PENDING';
create index webhook_messages_created on webhook_messages (created_at);

-- The delivery log: one row per attempt, and one per event that found its endpoint disabled (SKIPPED),
-- so that what was missed can be redelivered. Kept 30 days.
create table webhook_attempts (
  id text primary key,
  endpoint_id text not null references webhook_endpoints (id) on delete cascade,
  org_id text not null,
  message_id text,
  event_id text not null,
  event_type text not null,
  attempt integer not null,
  trigger text not null check (trigger in ('EVENT', 'TEST', 'REDELIVERY')),
  status text not null check (status in ('SUCCEEDED', 'FAILED', 'SKIPPED')),
  status_code integer,
  duration_ms integer,
  response_body text,
  error_kind text,
  error_message text,
  next_attempt_at timestamptz,
  created_at timestamptz not null
);
create index webhook_attempts_endpoint on webhook_attempts (endpoint_id, id);
create index webhook_attempts_created on webhook_attempts (created_at);

-- In-app notifications for organization owners and admins.
create table notifications (
  id text primary key,
  org_id text not null references organizations (id),
  member_id text not null references members (id),
  kind text not null,
  title text not null,
  body text not null,
  data jsonb not null default '{}',
  created_at timestamptz not null,
  read_at timestamptz
);
create index notifications_member on notifications (member_id, id);

-- Emails to send, written in the transaction of what they report; a mailer sends them (AULA_SMTP_URL).
create table email_outbox (
  id text primary key,
  org_id text references organizations (id),
  to_address text not null,
  subject text not null,
  text_body text not null,
  created_at timestamptz not null,
  next_attempt_at timestamptz not null,
  attempts integer not null default 0,
  claimed_until timestamptz,
  sent_at timestamptz,
  failed_at timestamptz,
  last_error text
);
create index email_outbox_due on email_outbox (next_attempt_at) where sent_at is null and failed_at is null;
