import { z } from 'zod';
import { PLAN_NAMES } from '../../src/core/plans.ts';
import { MAX_USAGE_DAYS, type UsageDay, type UsageQuery, type UsageReport } from '../../src/services/usage.ts';
import { schemaOf } from '../schemas/common.ts';
import { route } from '../route.ts';

const day = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/, 'a UTC date, YYYY-MM-DD').refine((v) => !Number.isNaN(Date.parse(`${v}T00:00:00Z`)), 'not a date');
const usageQuery = schemaOf<UsageQuery>()(
  z.strictObject({
    from: day.optional().describe('First day (UTC). Default: 30 days before `to`.'),
    to: day.optional().describe('The day after the last (UTC), exclusive. Default: tomorrow, so the range ends with today.'),
  }),
);
const counts = {
  meetings: z.number().int().describe('Meetings that went live that day.'),
  participantMinutes: z.number().int().describe('Time people spent in rooms that day (every stay, cut at midnight), in minutes.'),
  peakConcurrentParticipants: z.number().int().describe("The most people in the organization's rooms at once."),
};
const usageDay = schemaOf<UsageDay>()(z.object({ date: z.string(), ...counts }));
const usageReport = schemaOf<UsageReport>()(
  z.object({
    from: z.string(),
    to: z.string(),
    plan: z.enum(PLAN_NAMES as [string, ...string[]]) as z.ZodType<UsageReport['plan']>,
    limits: z.object({ maxLiveMeetings: z.number().int(), maxParticipants: z.number().int(), maxMeetingMinutes: z.number().int() }),
    days: z.array(usageDay),
    totals: z.object(counts),
  }),
);

export const usageRoutes = [
  route(
    {
      method: 'get',
      path: '/public/usage',
      tag: 'Usage',
      auth: 'apiKey',
      scope: 'meetings:read',
      summary: "The organization's usage per UTC day in [from, to), with its plan's limits beside it.",
      description: `At most ${MAX_USAGE_DAYS} days per request. Participant minutes come from the rooms' attendance intervals, so they start with this release.`,
      query: usageQuery,
      response: usageReport,
    },
    async ({ app, db, apiKey, query }) => ({ data: await app.services.usage.report(db, apiKey!.orgId, query, app.clock.now()) }),
  ),
];
