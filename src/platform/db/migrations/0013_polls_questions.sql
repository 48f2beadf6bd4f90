-- Polls, quizzes and Q&A (docs/polls-and-questions.md). The meeting's actor keeps them while the room is
-- live and writes each change here in its transition's transaction: a poll when it opens and when it
-- closes (then its answers too, and poll.closed in the same transaction), a question whenever it changes.
-- People are user ids; names are read from users, so erasing a user's personal data erases it here too.
-- Anonymous polls store no one's id; anonymous questions store no asker.
create table polls (
  id text primary key,
  org_id text not null references organizations (id),
  meeting_id text not null references meetings (id),
  question text not null,
  type text not null check (type in ('YES_NO', 'TRUE_FALSE', 'SINGLE_CHOICE', 'MULTIPLE_CHOICE', 'FREE_TEXT')),
  anonymous boolean not null,
  options jsonb not null,
  correct jsonb not null,
  status text not null check (status in ('OPEN', 'CLOSED')),
  shared boolean not null,
  votes jsonb not null,
  answered integer not null,
  created_by text,
  created_at timestamptz not null,
  closed_by text,
  closed_at timestamptz
);
create index polls_meeting on polls (meeting_id, created_at);

create table poll_responses (
  poll_id text not null references polls (id),
  seq integer not null,
  user_id text references users (id),
  choices jsonb not null,
  text text,
  correct boolean,
  responded_at timestamptz not null,
  primary key (poll_id, seq)
);
create index poll_responses_user on poll_responses (user_id) where user_id is not null;

create table questions (
  id text primary key,
  org_id text not null references organizations (id),
  meeting_id text not null references meetings (id),
  text text not null,
  anonymous boolean not null,
  asked_by text references users (id),
  asked_at timestamptz not null,
  upvotes integer not null,
  status text not null check (status in ('OPEN', 'ANSWERED', 'DISMISSED')),
  answer text,
  answered_live boolean not null,
  answered_by text,
  answered_at timestamptz,
  dismissed_at timestamptz
);
create index questions_meeting on questions (meeting_id, asked_at);
create index questions_asked_by on questions (asked_by) where asked_by is not null;
