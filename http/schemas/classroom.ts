import { z } from 'zod';
import { POLL_STATUSES, POLL_TYPES, QUESTION_STATUSES } from '../../src/core/classroom.ts';
import type { MeetingPolls, PollOption, PollRecord, PollResponse, QuizScore } from '../../src/services/polls.ts';
import type { MeetingQuestions, QuestionRecord } from '../../src/services/questions.ts';
import type { ChatRecord } from '../../src/services/chat.ts';
import { USER_ROLES } from '../../src/core/domain.ts';
import { ROOM_ROLES } from '../../src/core/room-access.ts';
import { schemaOf } from './common.ts';
import { memberUser } from './enrollments.ts';

const pollOption = schemaOf<PollOption>()(
  z.object({
    index: z.number().int().describe('What answers name in `choices`, from 0.'),
    text: z.string(),
    votes: z.number().int().nullable().describe('Once the poll closed; null while it is open.'),
    correct: z.boolean().optional().describe('Quizzes only.'),
  }),
);

const pollResponse = schemaOf<PollResponse>()(
  z.object({
    user: memberUser.nullable().describe('null in an anonymous poll (and for a guest).'),
    choices: z.array(z.number().int()).describe('Option indexes; empty for FREE_TEXT.'),
    text: z.string().nullable().describe('FREE_TEXT only.'),
    correct: z.boolean().optional().describe('Quizzes only: exactly the correct options were chosen.'),
    respondedAt: z.string(),
  }),
);

const pollRecord = schemaOf<PollRecord>()(
  z.object({
    pollId: z.string(),
    meetingId: z.string(),
    question: z.string(),
    type: z.enum(POLL_TYPES),
    anonymous: z.boolean(),
    quiz: z.boolean().describe('A quiz has correct options and grades each answer.'),
    status: z.enum(POLL_STATUSES),
    shared: z.boolean().describe('A host showed everyone in the room the results.'),
    options: z.array(pollOption),
    answered: z.number().int().nullable().describe('How many answered; null while open.'),
    responses: z.array(pollResponse).describe('Every answer, once the poll closed; empty while it is open.'),
    createdAt: z.string(),
    createdBy: z.string().nullable().describe('User id of the host who opened it.'),
    closedAt: z.string().nullable(),
    closedBy: z.string().nullable().describe('User id of the host who closed it; null when the meeting ending closed it.'),
  }),
);

const quizScore = schemaOf<QuizScore>()(
  z.object({
    user: memberUser,
    quizzes: z.number().int().describe('Closed quizzes of the meeting that name their people.'),
    answered: z.number().int(),
    correct: z.number().int(),
  }),
);

export const meetingPolls = schemaOf<MeetingPolls>()(
  z.object({
    meetingId: z.string(),
    externalMeetingId: z.string().nullable(),
    polls: z.array(pollRecord).describe('Oldest first.'),
    quizScores: z.array(quizScore).describe('Per student who answered a quiz, by name.'),
  }),
);

const questionRecord = schemaOf<QuestionRecord>()(
  z.object({
    questionId: z.string(),
    meetingId: z.string(),
    text: z.string(),
    anonymous: z.boolean(),
    askedBy: memberUser.nullable().describe('null for an anonymous question (and for a guest).'),
    askedAt: z.string(),
    upvotes: z.number().int(),
    status: z.enum(QUESTION_STATUSES),
    answer: z.string().nullable().describe('The written answer; null when answered live or not answered.'),
    answeredLive: z.boolean(),
    answeredBy: z.string().nullable().describe('User id of the host who answered or dismissed it.'),
    answeredAt: z.string().nullable(),
    dismissedAt: z.string().nullable(),
  }),
);

export const meetingQuestions = schemaOf<MeetingQuestions>()(
  z.object({
    meetingId: z.string(),
    externalMeetingId: z.string().nullable(),
    questions: z.array(questionRecord).describe('In the order they were asked, dismissed ones included.'),
  }),
);

export const chatRecord = schemaOf<ChatRecord>()(
  z.object({
    messageId: z.string(),
    meetingId: z.string(),
    sender: z.object({
      userId: z.string(),
      externalId: z.string(),
      name: z.string().describe('The name the room showed ("Deleted user" once the person deleted their account).'),
      role: z.enum(USER_ROLES),
      roomRole: z.enum(ROOM_ROLES),
    }),
    text: z.string(),
    sentAt: z.string(),
  }),
);
