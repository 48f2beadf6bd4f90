import { route } from '../route.ts';
import { chatRecord, meetingPolls, meetingQuestions } from '../schemas/classroom.ts';
import { z } from 'zod';
import { idParam, pageQuery } from '../schemas/common.ts';

const tag = 'Polls and Q&A';

export const classroomRoutes = [
  route(
    {
      method: 'get',
      path: '/public/meetings/:id/polls',
      tag,
      auth: 'apiKey',
      scope: 'meetings:read',
      summary: "A meeting's polls and quizzes, oldest first, with every answer once each closed, and each student's quiz score.",
      description: 'An open poll is listed without results (they are final when it closes; poll.closed carries them too). docs/polls-and-questions.md.',
      params: idParam,
      response: meetingPolls,
      errors: ['meeting_not_found'],
    },
    async ({ app, db, apiKey, params }) => ({ data: await app.services.polls.ofMeeting(db, apiKey!.orgId, params.id) }),
  ),
  route(
    {
      method: 'get',
      path: '/public/meetings/:id/questions',
      tag,
      auth: 'apiKey',
      scope: 'meetings:read',
      summary: "A meeting's Q&A: every question in the order asked, with its upvotes, answer and status.",
      description: 'Anonymous questions never name their asker. docs/polls-and-questions.md.',
      params: idParam,
      response: meetingQuestions,
      errors: ['meeting_not_found'],
    },
    async ({ app, db, apiKey, params }) => ({ data: await app.services.questions.ofMeeting(db, apiKey!.orgId, params.id) }),
  ),
  route(
    {
      method: 'get',
      path: '/public/meetings/:id/chat',
      tag,
      auth: 'apiKey',
      scope: 'meetings:read',
      summary: "A meeting's public chat, oldest first.",
      description: 'Messages to the room only: private conversations with the hosts and messages a host deleted are not listed. docs/chat.md.',
      params: idParam,
      query: z.strictObject(pageQuery),
      response: z.array(chatRecord),
      list: true,
      errors: ['meeting_not_found'],
    },
    async ({ app, db, apiKey, params, query }) => {
      const page = await app.services.chat.ofMeeting(db, apiKey!.orgId, params.id, query);
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
];
