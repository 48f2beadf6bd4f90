-- Organizations, API keys, users, classes, meetings, join-link use, meeting sessions,
-- waiting-room entries, background jobs, the event outbox and idempotency records.

create table organizations (
  id text primary key,
  name text not null,
  plan text not null check (plan in ('free', 'standard', 'pro', 'enterprise')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table api_keys (
  id text primary key,
  org_id text not null references organizations (id),
  name text not null,
  key_hash bytea not null unique,
  key_prefix text not null,
  scopes text[] not null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_org on api_keys (org_id);

create table users (
  id text primary key,
  org_id text not null references organizations (id),
  external_id text not null,
  full_name text not null,
  email text,
  role text not null,
  avatar_url text,
  status text not null default 'ACTIVE' check (status in ('ACTIVE', 'DEACTIVATED')),
  created_at timestamptz not null,
  updated_at timestamptz not null,
  deactivated_at timestamptz,
  -- join links and sessions issued at or before this instant are revoked
  revoked_before timestamptz,
  unique (org_id, external_id)
);
create index users_org_created on users (org_id, id);

create table classes (
  id text primary key,
  org_id text not null references organizations (id),
  external_id text,
  name text not null,
  section text,
  academic_year text,
  description text,
  course_id text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (org_id, external_id)
);

create table enrollments (
  id text primary key,
  org_id text not null references organizations (id),
  class_id text not null references classes (id),
  user_id text not null references users (id),
  batch_id text,
  status text not null check (status in ('ACTIVE', 'REMOVED')),
  enrolled_at timestamptz not null,
  removed_at timestamptz
);
create unique index enrollments_active on enrollments (class_id, user_id) where status = 'ACTIVE';
create index enrollments_class on enrollments (class_id, id);

create table meetings (
  id text primary key,
  org_id text not null references organizations (id),
  external_id text,
  slug text not null unique,
  kind text not null check (kind in ('MEETING', 'CLASS')),
  title text not null,
  class_id text references classes (id),
  batch_id text,
  host_user_id text not null references users (id),
  scheduled_start timestamptz not null,
  duration_minutes integer not null,
  settings jsonb not null,
  access_mode text not null check (access_mode in ('ORG_MEMBERS', 'ENROLLED', 'INVITED')),
  status text not null check (status in ('SCHEDULED', 'LIVE', 'ENDED', 'CANCELLED')),
  started_at timestamptz,
  ended_at timestamptz,
  ended_reason text,
  cancelled_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (org_id, external_id)
);
create index meetings_org_start on meetings (org_id, scheduled_start, id);
create index meetings_class on meetings (class_id);

create table meeting_invitations (
  meeting_id text not null references meetings (id),
  user_id text not null references users (id),
  created_at timestamptz not null,
  primary key (meeting_id, user_id)
);

-- A single-use join token is spent by recording its id; the device that spent it may open it again.
create table join_token_uses (
  jti text primary key,
  device_id text not null,
  session_id text not null,
  used_at timestamptz not null
);

create table meeting_sessions (
  id text primary key,
  org_id text not null references organizations (id),
  meeting_id text not null references meetings (id),
  user_id text not null references users (id),
  jti text not null,
  device_id text not null,
  role text not null,
  display_name text not null,
  redirect_url text,
  created_at timestamptz not null,
  refresh_until timestamptz not null,
  revoked_at timestamptz,
  revoked_reason text
);
create index meeting_sessions_user on meeting_sessions (user_id) where revoked_at is null;

create table waiting_room_entries (
  id text primary key,
  meeting_id text not null references meetings (id),
  session_id text not null references meeting_sessions (id),
  user_id text not null references users (id),
  status text not null,
  requested_at timestamptz not null,
  admitted_at timestamptz,
  admitted_by text
);
create index waiting_room_entries_meeting on waiting_room_entries (meeting_id, status);

create table jobs (
  id text primary key,
  org_id text not null references organizations (id),
  kind text not null,
  status text not null check (status in ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED')),
  input jsonb not null,
  total integer not null,
  processed integer not null default 0,
  succeeded integer not null default 0,
  failed integer not null default 0,
  failures jsonb not null default '[]',
  attempts integer not null default 0,
  locked_by text,
  locked_until timestamptz,
  created_at timestamptz not null,
  started_at timestamptz,
  finished_at timestamptz,
  error text
);
create index jobs_runnable on jobs (created_at) where status in ('QUEUED', 'RUNNING');

-- Transactional outbox: written in the same transaction as the change it reports.
create table outbox (
  id text primary key,
  org_id text not null references organizations (id),
  type text not null,
  data jsonb not null,
  created_at timestamptz not null,
  dispatched_at timestamptz
);
create index outbox_undispatched on outbox (id) where dispatched_at is null;
create index outbox_org_created on outbox (org_id, id);

create table idempotency_keys (
  scope text not null,
  key text not null,
  request_hash bytea not null,
  state text not null check (state in ('IN_PROGRESS', 'DONE')),
  response_status integer,
  response_body bytea,
  created_at timestamptz not null,
  locked_until timestamptz not null,
  expires_at timestamptz not null,
  primary key (scope, key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);
