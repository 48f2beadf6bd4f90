-- A user who deleted their own account (DELETE /users/me): deactivated, and their personal data erased
-- (name "Deleted user", email and avatar gone, their name in meeting sessions too). erased_at marks it
-- so that a later upsert by the customer's backend cannot write the data back.
alter table users add column erased_at timestamptz;
