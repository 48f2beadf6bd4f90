-- Attendance (docs/attendance.md). Every stay of a participant in a live room is an interval, written
-- by the meeting's actor in the transaction of the join or leave. A meeting goes live once, so it has
-- one attendance session, made at its first join; when its settle window has passed, the reconciled
-- records are written once (finalized_at is set in the same fenced transaction as attendance.finalized).
alter table organizations add column attendance_rules jsonb;

create table attendance_sessions (
  id text primary key,
  org_id text not null references organizations (id),
  meeting_id text not null unique references meetings (id),
  created_at timestamptz not null,
  finalized_at timestamptz
);

create table attendance_intervals (
  meeting_id text not null references meetings (id),
  participant_id text not null,
  user_id text not null references users (id),
  joined_at timestamptz not null,
  left_at timestamptz,
  primary key (meeting_id, participant_id, joined_at)
);
create index attendance_intervals_user on attendance_intervals (user_id);

-- The final report, one row per expected or present person; names are read from users, so erasing a
-- user's personal data erases it here too while the numbers stay.
create table attendance_records (
  session_id text not null references attendance_sessions (id),
  user_id text not null references users (id),
  status text not null check (status in ('PRESENT', 'LATE', 'ABSENT')),
  duration_seconds integer not null,
  joined_at timestamptz,
  left_at timestamptz,
  intervals jsonb not null,
  primary key (session_id, user_id)
);
