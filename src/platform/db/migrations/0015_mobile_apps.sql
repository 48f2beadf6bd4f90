-- The organization's own mobile apps (admin setting mobileApps). The join page offers an app only when
-- its organization configured one, and /.well-known/assetlinks.json and apple-app-site-association
-- vouch for every configured app; null is "no app on that platform".
--   android_app: { packageName, sha256CertFingerprints: [..] }
--   ios_app:     { teamId, bundleId }
alter table organizations
  add column android_app jsonb check (android_app is null or jsonb_typeof(android_app) = 'object'),
  add column ios_app jsonb check (ios_app is null or jsonb_typeof(ios_app) = 'object');

-- The well-known documents read only the organizations with an app, oldest first.
create index organizations_android_app on organizations (created_at, id) where android_app is not null;
create index organizations_ios_app on organizations (created_at, id) where ios_app is not null;
