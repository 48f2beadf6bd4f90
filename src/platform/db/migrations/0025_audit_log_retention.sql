-- The audit log is kept 400 days (src/services/retention.ts): the hourly maintenance deletes by age.
create index audit_log_at on audit_log (at);
