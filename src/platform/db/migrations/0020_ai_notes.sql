-- Transcripts and lecture notes of recordings (docs/ai-notes.md). Each run is a row: the automatic one
-- queued with recording.ready, and one per regeneration (POST /public/recordings/:id/notes). A run keeps
-- each step's result as it goes (`tracks`: one participant's track transcribed; then `transcript`, the
-- tracks merged on the recording's timeline; then `notes`), so a run taken over after a crash goes on
-- from its last step. It becomes READY with transcript.ready and insights.ready in one transaction.
-- A deleted recording's runs are deleted with it (its words go with its files).
alter table organizations add column ai_notes boolean not null default true;
alter table organizations add column language text not null default 'en';

create table recording_notes (
  id text primary key,
  org_id text not null references organizations (id),
  recording_id text not null references recordings (id),
  job_id text not null,
  status text not null check (status in ('RUNNING', 'READY', 'FAILED')),
  manual boolean not null,
  language text not null,
  tracks jsonb not null default '{}',
  transcript jsonb,
  word_count integer,
  duration_ms integer,
  transcribed_at timestamptz,
  notes jsonb,
  engines jsonb,
  failure_reason text,
  created_at timestamptz not null,
  finished_at timestamptz
);
create index recording_notes_recording on recording_notes (recording_id, created_at desc);
