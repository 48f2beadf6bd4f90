-- Failed sign-ins, by account and client address, for the sign-in throttle (src/services/sign-in-throttle.ts).
-- Rows older than a day are deleted as new failures come in.
create table sign_in_failures (
  org_id text not null,
  email text not null,
  address text not null,
  failed_at timestamptz not null
);
create index sign_in_failures_account on sign_in_failures (org_id, email, failed_at);
create index sign_in_failures_age on sign_in_failures (failed_at);
