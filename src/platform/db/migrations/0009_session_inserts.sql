-- A meeting session is written by the join-token exchange, the path every student takes at the start
-- of a class. Its foreign keys made every insert lock the organization's and the meeting's rows (FOR KEY
-- SHARE, a MultiXact once two exchanges overlap) and the user's: on this machine they halved the rate of
-- a bare insert (pgbench, 64 clients: 18,800/s without, 9,700 to 10,400 with). The exchange's one
-- statement reads the user's and the meeting's rows (and share-locks the user's), and no organization,
-- meeting or user row is ever deleted, so the keys guard nothing the statement does not.
alter table meeting_sessions drop constraint meeting_sessions_org_id_fkey;
alter table meeting_sessions drop constraint meeting_sessions_meeting_id_fkey;
alter table meeting_sessions drop constraint meeting_sessions_user_id_fkey;
