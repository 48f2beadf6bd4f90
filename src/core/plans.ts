/**
 * The plan table: API rate budget per key per minute, meeting-duration cap, people in one room, meetings
 * live at once in the organization, features.
 */
export const PLANS = {
  free: { rateLimitPerMinute: 600, maxMeetingMinutes: 40, maxParticipants: 100, maxLiveMeetings: 2, features: [], recordingStorageGb: 0 },
  standard: { rateLimitPerMinute: 1_200, maxMeetingMinutes: 300, maxParticipants: 300, maxLiveMeetings: 20, features: ['recording'], recordingStorageGb: 10 },
  pro: { rateLimitPerMinute: 3_000, maxMeetingMinutes: 720, maxParticipants: 500, maxLiveMeetings: 200, features: ['webhooks', 'recording', 'ai_notes'], recordingStorageGb: 100 },
  enterprise: { rateLimitPerMinute: 10_000, maxMeetingMinutes: 1_440, maxParticipants: 1_000, maxLiveMeetings: 2_000, features: ['webhooks', 'recording', 'ai_notes'], recordingStorageGb: 1_000 },
} as const satisfies Record<string, { rateLimitPerMinute: number; maxMeetingMinutes: number; maxParticipants: number; maxLiveMeetings: number; features: readonly string[]; recordingStorageGb: number }>;

export type PlanName = keyof typeof PLANS;
export type Feature = 'webhooks' | 'recording' | 'ai_notes';
export const PLAN_NAMES = Object.keys(PLANS) as PlanName[];

export const planHas = (plan: PlanName, feature: Feature): boolean =>
  (PLANS[plan].features as readonly string[]).includes(feature);
