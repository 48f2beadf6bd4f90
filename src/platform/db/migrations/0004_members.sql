-- Organization owners and admins who sign in with email and password, and their sessions.

create table members (
  id text primary key,
  org_id text not null references organizations (id),
  -- stored trimmed and lowercased by the service, so uniqueness and sign-in ignore case
  email text not null check (length(email) between 3 and 320),
  role text not null check (role in ('owner', 'admin')),
  -- a self-describing PHC string ($argon2id$v=19$m=...,t=...,p=...$salt$hash)
  password_hash text not null,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  disabled_at timestamptz,
  unique (org_id, email)
);

-- The session token and its CSRF token are stored only as SHA-256 (both carry 256 bits of entropy).
create table admin_sessions (
  id text primary key,
  member_id text not null references members (id),
  org_id text not null references organizations (id),
  token_hash bytea not null unique,
  csrf_token_hash bytea not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  last_seen_at timestamptz not null,
  revoked_at timestamptz
);
create index admin_sessions_member on admin_sessions (member_id) where revoked_at is null;
create index admin_sessions_expiry on admin_sessions (expires_at);
