-- The room's chat (docs/chat.md): rows, not the meeting actor's state, kept as long as the meeting's data.
-- An author is a meeting session: names are read from meeting_sessions.display_name, which a person's
-- erasure overwrites ("Deleted user"), so an erased person's messages stay, with their author erased.
-- `private_with`: the student's session whose conversation with the hosts this is; null: to the room.
-- A host's deletion clears the text and keeps the row (who deleted it, and when).
create table chat_messages (
  id text primary key,
  org_id text not null references organizations (id),
  meeting_id text not null references meetings (id),
  session_id text not null references meeting_sessions (id),
  room_role text not null check (room_role in ('HOST', 'COHOST', 'PARTICIPANT', 'VIEWER')),
  private_with text references meeting_sessions (id),
  text text,
  sent_at timestamptz not null,
  deleted_at timestamptz,
  deleted_by text
);
create index chat_messages_meeting on chat_messages (meeting_id, sent_at, id);
