-- A recording's notes as a person left them (docs/ai-notes.md, "Reviewing the notes"): the console's
-- admins edit the summary and chapters of the current run (`edited_notes`, who and when), and may hide
-- the notes from the player page until they are right (`notes_hidden`, per recording: a regeneration
-- does not show what was hidden).
alter table recording_notes add column edited_notes jsonb;
alter table recording_notes add column edited_by text;
alter table recording_notes add column edited_at timestamptz;
alter table recordings add column notes_hidden boolean not null default false;
