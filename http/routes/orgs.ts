import { z } from 'zod';
import { PLAN_NAMES, PLANS } from '../../src/plans.ts';
import { getOrg } from '../../src/services/orgs.ts';
import { route } from '../route.ts';

const tag = 'Organization (admin)';

/** The admin surface, `/orgs/:orgId/...`: signed-in owners and admins of that organization only. */
export const orgRoutes = [
  route(
    {
      method: 'get',
      path: '/orgs/:orgId',
      tag,
      auth: 'admin',
      summary: 'The signed-in admin\'s organization: name, plan and plan features.',
      params: z.object({ orgId: z.string().min(1).max(64) }),
      response: z.object({ id: z.string(), name: z.string(), plan: z.enum(PLAN_NAMES as [string, ...string[]]), features: z.array(z.string()) }),
    },
    async ({ db, params }) => {
      const org = await getOrg(db, params.orgId);
      return { data: { id: org.id, name: org.name, plan: org.plan, features: [...PLANS[org.plan].features] } };
    },
  ),
];
