-- Organization owners and admins are "admins" (a "member" is a user of an organization, as the API
-- says, and the servers of a cluster are "nodes"). The rename is one transaction; nodes of 0.1 read
-- the old names, so this release is upgraded by stopping every node first (CHANGELOG.md, 0.2.0).
alter table members rename to admins;
alter table admins rename constraint members_pkey to admins_pkey;
alter table admins rename constraint members_org_id_fkey to admins_org_id_fkey;
alter table admins rename constraint members_org_id_email_key to admins_org_id_email_key;
alter table admins rename constraint members_email_check to admins_email_check;
alter table admins rename constraint members_role_check to admins_role_check;

alter table admin_sessions rename column member_id to admin_id;
alter table admin_sessions rename constraint admin_sessions_member_id_fkey to admin_sessions_admin_id_fkey;
alter index admin_sessions_member rename to admin_sessions_admin;

alter table notifications rename column member_id to admin_id;
alter table notifications rename constraint notifications_member_id_fkey to notifications_admin_id_fkey;
alter index notifications_member rename to notifications_admin;
