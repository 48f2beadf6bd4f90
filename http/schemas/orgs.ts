import { z } from 'zod';
import {
  ANDROID_PACKAGE,
  ANDROID_PACKAGE_RULE,
  IOS_BUNDLE_ID,
  IOS_BUNDLE_ID_RULE,
  IOS_TEAM_ID,
  IOS_TEAM_ID_RULE,
  MAX_ALLOWED_ORIGINS,
  MAX_APP_ID_LENGTH,
  MAX_FINGERPRINTS,
  ORIGIN_RULE,
  parseOrigin,
  SHA256_FINGERPRINT,
  SHA256_FINGERPRINT_RULE,
  type AndroidApp,
  type IosApp,
  type MobileApps,
  type MobileAppsPatch,
} from '../../src/services/orgs.ts';
import { schemaOf } from './common.ts';

/** The setting as customers send it: origins (http or https, for staging hosts too), at most 50, normalized and deduplicated. */
export const allowedOrigins = z
  .array(z.string().max(300).refine((v) => parseOrigin(v) !== null, ORIGIN_RULE))
  .max(MAX_ALLOWED_ORIGINS, `at most ${MAX_ALLOWED_ORIGINS} origins`)
  .transform((list) => [...new Set(list.map((v) => parseOrigin(v)!))])
  .describe('Origins (scheme, host and optional port) whose pages may frame the room with the embedding SDK.');

const packageName = z.string().max(MAX_APP_ID_LENGTH).regex(ANDROID_PACKAGE, ANDROID_PACKAGE_RULE).describe('The Android application id (package name), like org.school.classroom.');
const fingerprints = z
  .array(z.string().max(95).regex(SHA256_FINGERPRINT, SHA256_FINGERPRINT_RULE))
  .min(1, 'at least one fingerprint: the certificate the app is signed with')
  .max(MAX_FINGERPRINTS, `at most ${MAX_FINGERPRINTS} fingerprints`)
  .describe('SHA-256 fingerprints of the certificates the app is signed with (with Play App Signing, the app signing key), as 32 upper-case hex pairs separated by colons.');

/** As stored and answered. */
const androidApp = schemaOf<AndroidApp>()(z.strictObject({ packageName, sha256CertFingerprints: fingerprints }));
/** As sent: a fingerprint given twice is kept once. */
const androidAppInput = schemaOf<AndroidApp>()(z.strictObject({ packageName, sha256CertFingerprints: fingerprints.transform((list) => [...new Set(list)]) }));

const iosApp = schemaOf<IosApp>()(
  z.strictObject({
    teamId: z.string().regex(IOS_TEAM_ID, IOS_TEAM_ID_RULE).describe('The Apple developer team id (the App ID prefix), 10 upper-case letters and digits.'),
    bundleId: z.string().max(MAX_APP_ID_LENGTH).regex(IOS_BUNDLE_ID, IOS_BUNDLE_ID_RULE).describe('The bundle id, like org.school.classroom.'),
  }),
);

/** The setting as an admin reads it: each platform's app, or null when the organization has none there. */
export const mobileApps = schemaOf<MobileApps>()(
  z.object({
    android: androidApp.nullable(),
    ios: iosApp.nullable(),
  }),
);

/** The setting as an admin changes it: a platform given is replaced, null removes it, one left out stays. */
export const mobileAppsPatch = schemaOf<MobileAppsPatch>()(
  z.strictObject({
    android: androidAppInput.nullable().optional(),
    ios: iosApp.nullable().optional(),
  }),
);
