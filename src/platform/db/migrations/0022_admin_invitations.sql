-- The console's admins (docs/console-api.md): owners invite owners and admins by email with a one-time
-- link valid 24 hours. The link's token (256 bits) is stored only as SHA-256. A new invitation to the
-- same email revokes the pending one; disabling the owner who sent it revokes it too.
create table admin_invitations (
  id text primary key,
  org_id text not null references organizations (id),
  email text not null check (length(email) between 3 and 320),
  role text not null check (role in ('owner', 'admin')),
  token_hash bytea not null unique,
  invited_by text not null references admins (id),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  accepted_at timestamptz,
  accepted_admin_id text references admins (id),
  revoked_at timestamptz,
  -- whether an email was queued (AULA_SMTP_URL set), or the link was shown to the owner to pass on
  emailed boolean not null
);
create index admin_invitations_org on admin_invitations (org_id, id desc);
create index admin_invitations_pending on admin_invitations (org_id, email) where accepted_at is null and revoked_at is null;

-- who invited an admin who joined by invitation (null for those the operator's CLI added)
alter table admins add column invited_by text references admins (id);
