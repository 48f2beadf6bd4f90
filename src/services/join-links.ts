import type { Clock } from '../core/clock.ts';
import { atEndOfTurn } from '../platform/end-of-turn.ts';
import type { Db } from '../platform/db/index.ts';
import { AppError } from '../core/errors.ts';
import { hasScope, type Scope } from '../core/scopes.ts';
import type { Meetings } from './meetings.ts';
import { RoomAccess } from '../core/room-access.ts';
import type { Tokens } from './tokens.ts';
import type { RoomRole } from '../core/room-access.ts';
import type { UserRole } from '../core/domain.ts';
import type { Users } from './users.ts';

export const DEFAULT_EXPIRY_SECONDS = 300;
export const MAX_EXPIRY_SECONDS = 86_400;

/** A join link as the API mints it for a user given by exactly one of `userId` and `externalUserId`. */
export interface JoinLinkInput {
  userId?: string | undefined;
  externalUserId?: string | undefined;
  role?: RoomRole | undefined;
  displayName?: string | undefined;
  expiresInSeconds?: number | undefined;
  singleUse?: boolean | undefined;
  redirectUrl?: string | undefined;
}

/** A minted join link as the API shows it. */
export interface JoinLinkRecord {
  url: string;
  embedUrl: string;
  token: string;
  expiresAt: string;
  role: RoomRole;
  singleUse: boolean;
  userId: string;
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

  /** Mints a link: cached reads and one seal (AES-256-GCM, src/crypto.ts, sealed at the end of the event loop's turn with the turn's other mints), no write. */
  async mint(db: Db, orgId: string, scopes: ReadonlySet<Scope>, meetingId: string, input: JoinLinkInput, baseUrl: string): Promise<JoinLinkRecord> {
    const meeting = await this.#meetings.getCached(db, orgId, meetingId);
    if (meeting.status === 'ENDED' || meeting.status === 'CANCELLED') {
      throw new AppError('meeting_ended', { details: { status: meeting.status } });
    }
    const user = await (input.userId ? this.#users.getCached(db, orgId, input.userId) : this.#users.getCached(db, orgId, input.externalUserId!, 'external'));
    if (user.status !== 'ACTIVE') throw new AppError('user_deactivated', { details: { userId: user.id } });
    const role = capRole(input.role, user.role, scopes);
    const now = this.#clock.now();
    const exp = now + (input.expiresInSeconds ?? DEFAULT_EXPIRY_SECONDS) * 1000;
    const singleUse = input.singleUse ?? true;
    const claims = { o: orgId, m: meeting.id, u: user.id, r: role, n: input.displayName ?? null, i: now, e: exp, s: singleUse, d: input.redirectUrl ?? null };
    const token = await atEndOfTurn(() => this.#tokens.join.issue(claims));
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
