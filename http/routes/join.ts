import { exchangeBody, meetingSession } from '../schemas/sessions.ts';
import { route } from '../route.ts';

const tag = 'Joining';

export const joinRoutes = [
  route(
    {
      method: 'post',
      path: '/join-tokens/exchange',
      tag,
      auth: 'none',
      ipLimit: { name: 'exchange', perMinute: 300 },
      summary: 'Exchange a join token for a meeting session.',
      description:
        'Called by the join page after it loads, so link previews never spend a link. Access is checked again as of now. A single-use link opened again by the device that spent it resumes the same session (a reload in the same tab); from any other device it answers join_token_used.',
      body: exchangeBody,
      response: meetingSession,
      errors: ['join_token_invalid', 'join_token_expired', 'join_token_used', 'join_token_revoked', 'user_deactivated', 'not_a_member', 'not_enrolled', 'not_invited', 'meeting_ended', 'meeting_locked', 'meeting_full', 'plan_limit_reached', 'rate_limited'],
    },
    async ({ app, db, body }) => ({ data: await app.services.sessions.exchange(db, body.token, body.deviceId) }),
  ),
  route(
    {
      method: 'post',
      path: '/join-tokens/refresh',
      tag,
      auth: 'session',
      ipLimit: { name: 'refresh', perMinute: 120 },
      summary: 'Refresh a meeting session (Bearer accessToken).',
      description: 'Allowed for 24 hours after the exchange, even with an expired accessToken; refused once the user is deactivated, the session revoked or the meeting ended.',
      response: meetingSession,
      errors: ['session_invalid', 'session_expired', 'session_revoked', 'user_deactivated', 'meeting_ended', 'rate_limited'],
    },
    async ({ app, db, session }) => ({ data: await app.services.sessions.refresh(db, session!) }),
  ),
];
