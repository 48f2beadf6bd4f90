-- Recordings (docs/recordings.md). The meeting's actor starts, pauses and stops them and writes each
-- change here in its transition's transaction (with recording.started); the composition job writes
-- READY or FAILED (with recording.ready or recording.failed); DELETE and retention write DELETED.
-- `segments`: how many capture segments the media nodes began (a new one where the room's media is
-- placed anew); their raw tracks are kept in storage under recordings/<org_id>/<id>/raw/<segment>/.
create table recordings (
  id text primary key,
  org_id text not null references organizations (id),
  meeting_id text not null references meetings (id),
  status text not null check (status in ('RECORDING', 'READY', 'FAILED', 'DELETED')),
  phase text check (phase in ('CAPTURING', 'PROCESSING')),
  automatic boolean not null,
  started_by text,
  started_at timestamptz not null,
  ended_at timestamptz,
  paused_at timestamptz,
  paused_ms bigint not null default 0,
  segments integer not null default 0,
  duration_seconds integer,
  file_size_bytes bigint,
  audio_size_bytes bigint,
  mime_type text,
  failure_reason text,
  deleted_at timestamptz,
  updated_at timestamptz not null
);
create index recordings_org on recordings (org_id, started_at desc, id desc);
create index recordings_meeting on recordings (meeting_id, started_at);
create index recordings_retention on recordings (started_at) where status in ('READY', 'FAILED');

-- how long an organization's recordings are kept (days; null: RECORDING_LIMITS.retentionDays, 365)
alter table organizations add column recording_retention_days integer;

-- the composition jobs run on the durable job runner beside bulk imports; one may wait to be claimed
-- until its capture has had time to be saved
alter table jobs add column not_before timestamptz;
