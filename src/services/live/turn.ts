import { createHmac } from 'node:crypto';
import type { Clock } from '../../core/clock.ts';
import { iso } from '../../core/clock.ts';
import type { IceServer, TurnCredentialsMessage } from '../../core/room-protocol.ts';
import type { RoomConnection } from '../../platform/cluster/connections.ts';
import type { Sql } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/logger.ts';

/** How long one set of TURN credentials lasts (never beyond the session's refresh window). */
export const TURN_CREDENTIAL_TTL_MS = 60 * 60_000;
/** New credentials go to a socket this long before its current ones expire. */
export const TURN_RENEW_BEFORE_MS = 10 * 60_000;

/**
 * coturn's REST credentials (its `use-auth-secret` mode, docs/networks.md): the username is
 * `<expiry in unix seconds>:<session id>`, the password the base64 HMAC-SHA1 of the username under
 * the shared secret. coturn checks both, and refuses a username whose expiry has passed.
 */
export function turnCredential(secret: string, sessionId: string, expiresAtMs: number): { username: string; credential: string } {
  const username = `${Math.floor(expiresAtMs / 1000)}:${sessionId}`;
  return { username, credential: createHmac('sha1', secret).update(username).digest('base64') };
}

export interface TurnOptions {
  urls: string[];
  secret: string;
  clock: Clock;
  sql: Sql;
  log: Logger;
}

/**
 * The TURN relays each media session may use: credentials minted when a socket joins the room's media
 * (in the media-join answer), and renewed on that socket before they expire (`turn-credentials`) for as
 * long as the session may be refreshed and is not revoked. Renewals are checked on the rooms service's
 * sweep, against the injected clock.
 */
export class TurnRelays {
  readonly #o: TurnOptions;
  /** Room sockets on this node that hold credentials, with when those expire. */
  readonly #granted = new Map<RoomConnection, number>();

  constructor(o: TurnOptions) {
    this.#o = o;
  }

  /** Credentials for the socket's session, remembered for renewal; none when the session is revoked or past its refresh window. */
  async grant(c: RoomConnection): Promise<{ iceServers: IceServer[]; iceServersExpireAt: string | null }> {
    const expiresAt = await this.#expiry(c.sessionId);
    if (expiresAt === null || c.closed) {
      this.#granted.delete(c);
      return { iceServers: [], iceServersExpireAt: null };
    }
    this.#granted.set(c, expiresAt);
    return { iceServers: this.#servers(c.sessionId, expiresAt), iceServersExpireAt: iso(expiresAt) };
  }

  /** Sockets whose credentials expire within TURN_RENEW_BEFORE_MS get new ones; closed sockets are forgotten. */
  async renewDue(): Promise<number> {
    const now = this.#o.clock.now();
    let renewed = 0;
    for (const [c, expiresAt] of [...this.#granted]) {
      if (c.closed) {
        this.#granted.delete(c);
        continue;
      }
      if (expiresAt - now > TURN_RENEW_BEFORE_MS) continue;
      try {
        const next = await this.#expiry(c.sessionId);
        if (next === null || next <= expiresAt) {
          // revoked, or at the end of its refresh window: these are its last
          this.#granted.delete(c);
          continue;
        }
        this.#granted.set(c, next);
        const m: TurnCredentialsMessage = { type: 'turn-credentials', iceServers: this.#servers(c.sessionId, next), expiresAt: iso(next) };
        c.send(JSON.stringify(m));
        renewed++;
      } catch (err) {
        this.#o.log.warn({ err, meetingId: c.meetingId }, 'could not renew TURN credentials');
      }
    }
    return renewed;
  }

  /** Credentials for a session without a socket to renew them on (the pre-join network check): they simply expire. */
  async forSession(sessionId: string): Promise<{ iceServers: IceServer[]; iceServersExpireAt: string | null }> {
    const expiresAt = await this.#expiry(sessionId);
    return expiresAt === null ? { iceServers: [], iceServersExpireAt: null } : { iceServers: this.#servers(sessionId, expiresAt), iceServersExpireAt: iso(expiresAt) };
  }

  /** How many sockets hold credentials now (tests, status). */
  get holders(): number {
    return this.#granted.size;
  }

  #servers(sessionId: string, expiresAt: number): IceServer[] {
    const { username, credential } = turnCredential(this.#o.secret, sessionId, expiresAt);
    return [{ urls: this.#o.urls, username, credential }];
  }

  /** When credentials minted now would expire: an hour from now, never past the session's refresh window; null for a revoked or spent session. */
  async #expiry(sessionId: string): Promise<number | null> {
    const now = this.#o.clock.now();
    const [row] = await this.#o.sql<{ refreshUntil: Date; revokedAt: Date | null }[]>`select refresh_until, revoked_at from meeting_sessions where id = ${sessionId}`;
    if (!row || row.revokedAt) return null;
    const until = Math.min(now + TURN_CREDENTIAL_TTL_MS, row.refreshUntil.getTime());
    return until > now ? until : null;
  }
}
