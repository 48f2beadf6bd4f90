-- An organization's short name (docs/console.md): what its admins may type at sign-in instead of its
-- id. Lowercase letters, digits and hyphens (it can never look like an `org_` id); unique.
alter table organizations add column short_name text unique;
