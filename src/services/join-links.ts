import { z } from 'zod';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { hasScope, type Scope } from '../scopes.ts';
import { externalId, httpsUrl } from './common.ts';
import type { MeetingRow, Meetings } from './meetings.ts';
import { RoomAccess } from '../rooms/access.ts';
import { ROOM_ROLES, type RoomRole, type Tokens } from './tokens.ts';
import type { UserRole } from '../domain.ts';
import type { UserRow, Users } from './users.ts';

export { ROOM_ROLES };
export const DEFAULT_EXPIRY_SECONDS = 300;
export const MAX_EXPIRY_SECONDS = 86_400;

export const joinLinkCreate = z
  .strictObject({
    userId: externalId.optional().describe('Service user id or externalId.'),
    externalUserId: externalId.optional().describe('Your externalId of the user.'),
    role: z.enum(ROOM_ROLES).optional().describe('Default PARTICIPANT; capped by the user\'s organization role.'),
    displayName: z.string().trim().min(1).max(200).optional().describe('Defaults to the user\'s full name.'),
    expiresInSeconds: z.number().int().min(1).max(MAX_EXPIRY_SECONDS).optional().describe(`Default ${DEFAULT_EXPIRY_SECONDS}, at most ${MAX_EXPIRY_SECONDS}.`),
    singleUse: z.boolean().optional().describe('Default true.'),
    redirectUrl: httpsUrl.optional().describe('https URL the join page sends the user to after they leave or the meeting ends.'),
  })
  .refine((b) => (b.userId === undefined) !== (b.externalUserId === undefined), {
    message: 'give exactly one of userId and externalUserId',
    path: ['userId'],
  });

export type JoinLinkInput = z.infer<typeof joinLinkCreate>;
export type JoinLinkRecord = z.infer<typeof joinLinkRecord>;

export const joinLinkRecord = z.object({
  url: z.string(),
  embedUrl: z.string(),
  token: z.string(),
  expiresAt: z.string(),
  role: z.enum(ROOM_ROLES),
  singleUse: z.boolean(),
  userId: z.string(),
});

/** Characters a JSON string must escape (JSON.stringify also escapes lone surrogates). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const jsonString = (s: string): string => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

/**
 * `JSON.stringify({ data: link })`, built by hand: a mint's response is mostly its token three times,
 * and JSON.stringify's generic walk cost more than the rest of the envelope (test/http/join.test.ts
 * compares the two).
 */
export function joinLinkJson(l: JoinLinkRecord): string {
  const token = NEEDS_ESCAPE.test(l.token) ? null : `"${l.token}"`;
  return `{"data":{"url":${urlJson(l.url, l.token, token !== null)},"embedUrl":${urlJson(l.embedUrl, l.token, token !== null)},"token":${token ?? JSON.stringify(l.token)},"expiresAt":${jsonString(l.expiresAt)},"role":"${l.role}","singleUse":${l.singleUse},"userId":${jsonString(l.userId)}}}`;
}

/** A link's URL ends with its token: when the token needs no escape, only the part before it is looked at. */
function urlJson(url: string, token: string, tokenSafe: boolean): string {
  if (!tokenSafe || !url.endsWith(token)) return jsonString(url);
  return NEEDS_ESCAPE.test(url.slice(0, url.length - token.length)) ? JSON.stringify(url) : `"${url}"`;
}

/** The asked role, capped by the user's organization role (RoomAccess.linkRole). */
export function capRole(asked: RoomRole | undefined, userRole: UserRole, scopes: ReadonlySet<Scope>): RoomRole {
  const role = RoomAccess.linkRole(asked, userRole, hasScope(scopes, 'meetings:write'));
  if (typeof role === 'string') return role;
  throw new AppError(role.code, { message: role.message, details: { role: asked, userRole } });
}

export class JoinLinks {
  readonly #clock: Clock;
  readonly #tokens: Tokens;
  readonly #users: Users;
  readonly #meetings: Meetings;

  constructor(clock: Clock, tokens: Tokens, users: Users, meetings: Meetings) {
    this.#clock = clock;
    this.#tokens = tokens;
    this.#users = users;
    this.#meetings = meetings;
  }

  /** Mints a link: cached reads and one seal (AES-256-GCM, src/crypto.ts), no write. */
  async mint(db: Db, orgId: string, scopes: ReadonlySet<Scope>, meetingId: string, input: JoinLinkInput, baseUrl: string): Promise<JoinLinkRecord> {
    const meeting = await this.#meetings.getCached(db, orgId, meetingId);
    if (meeting.status === 'ENDED' || meeting.status === 'CANCELLED') {
      throw new AppError('meeting_ended', { details: { status: meeting.status } });
    }
    const user = await (input.userId ? this.#users.getCached(db, orgId, input.userId) : this.#users.getCached(db, orgId, input.externalUserId!, 'external'));
    return this.#issue(orgId, scopes, meeting, user, input, baseUrl);
  }

  #issue(orgId: string, scopes: ReadonlySet<Scope>, meeting: MeetingRow, user: UserRow, input: JoinLinkInput, baseUrl: string): JoinLinkRecord {
    if (user.status !== 'ACTIVE') throw new AppError('user_deactivated', { details: { userId: user.id } });
    const role = capRole(input.role, user.role, scopes);
    const now = this.#clock.now();
    const exp = now + (input.expiresInSeconds ?? DEFAULT_EXPIRY_SECONDS) * 1000;
    const singleUse = input.singleUse ?? true;
    const token = this.#tokens.join.issue({
      o: orgId,
      m: meeting.id,
      u: user.id,
      r: role,
      n: input.displayName ?? null,
      i: now,
      e: exp,
      s: singleUse,
      d: input.redirectUrl ?? null,
    });
    return {
      url: `${baseUrl}/join/${meeting.slug}#jt=${token}`,
      embedUrl: `${baseUrl}/embed/${meeting.slug}?jt=${token}`,
      token,
      expiresAt: new Date(exp).toISOString(),
      role,
      singleUse,
      userId: user.id,
    };
  }
}
