/**
 * The HTTP calls the page makes (docs/api.md, "Client-side endpoints"), and what it says for each error
 * code. The session is the exchange's answer (`meetingSession` in src/services/sessions.ts).
 */

import type { MeetingSession, WaitingStatus } from '../../src/core/room.ts';
import type { RoomRole } from '../../src/core/room-access.ts';
import type { IceServer } from '../../src/core/room-protocol.ts';

export type { RoomRole };
/** The exchange's and the refresh's answer: the server's one definition, types only (nothing of the server is bundled). */
export type Session = MeetingSession;

export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

async function call<T>(method: string, path: string, opts: { body?: unknown; bearer?: string } = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`/api/v1${path}`, {
      method,
      headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}) },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      cache: 'no-store',
    });
  } catch {
    throw new ApiError('network_error', 'The service could not be reached.', 0);
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(body?.error?.code ?? 'internal_error', body?.error?.message ?? 'Something went wrong.', res.status);
  return body.data as T;
}

export const exchange = (token: string, deviceId: string) => call<Session>('POST', '/join-tokens/exchange', { body: { token, deviceId } });
export const refresh = (accessToken: string) => call<Session>('POST', '/join-tokens/refresh', { bearer: accessToken });
export const waitingStatus = (s: Session) =>
  call<{ status: WaitingStatus }>('GET', `/meetings/${s.meeting.slug}/waiting-room/status/${s.waitingRoom!.queueId}`, { bearer: s.accessToken });
export const roomToken = (s: Session, deviceId: string) =>
  call<{ mediaToken: string; mediaUrl: string }>('POST', `/meetings/${s.meeting.slug}/token`, { bearer: s.accessToken, body: { queueId: s.waitingRoom!.queueId, deviceId } });

/** The pre-join network check's probes (path-check.ts): one transport per path, and the relays to try. */
export const networkCheck = (s: Session) =>
  call<{ routerRtpCapabilities: unknown; probes: { kind: 'udp' | 'tcp' | 'relay'; transportId: string; iceParameters: unknown; iceCandidates: unknown[]; dtlsParameters: unknown; sctpParameters: unknown }[]; iceServers: IceServer[] }>(
    'POST',
    `/meetings/${s.meeting.slug}/network-check`,
    { bearer: s.accessToken },
  );
export const probeConnect = (s: Session, transportId: string, dtlsParameters: unknown) =>
  call<Record<string, never>>('POST', `/meetings/${s.meeting.slug}/network-check/${encodeURIComponent(transportId)}/connect`, { bearer: s.accessToken, body: { dtlsParameters } }).then(() => undefined);

/** What a person reads for each refusal: a heading and a sentence. */
export const MESSAGES: Record<string, [string, string]> = {
  join_token_expired: ['This link has expired', 'Ask whoever sent it for a new one.'],
  join_token_used: ['This link was already used', 'It was opened on another device. Ask for a new link to join from here.'],
  join_token_revoked: ['This link is no longer valid', 'It was withdrawn. Ask for a new one.'],
  join_token_invalid: ['This link is not valid', 'Check that you opened the whole link.'],
  user_deactivated: ['Your account is deactivated', 'Contact your school or course provider.'],
  not_a_member: ['You cannot join this meeting', 'You are not a member of this organization.'],
  not_enrolled: ['You cannot join this class', 'It is for enrolled students only.'],
  not_invited: ['You cannot join this meeting', 'It is for invited people only.'],
  meeting_ended: ['This meeting has ended', 'There is nothing more to join.'],
  meeting_cancelled: ['This meeting was cancelled', 'There is nothing to join.'],
  meeting_locked: ['This meeting is locked', 'A host locked it, so nobody new can join. Ask a host to unlock it, then open your link again.'],
  meeting_full: ['This meeting is full', 'It has as many people as it allows. Try again when someone leaves.'],
  plan_limit_reached: ['This meeting cannot start yet', 'Your school has as many meetings running as its plan allows. Try again when one ends.'],
  rate_limited: ['Too many attempts', 'Wait a minute, then try again.'],
  session_revoked: ['You were removed from this meeting', 'A host removed you, or your access was withdrawn.'],
  session_expired: ['Your session has expired', 'Open your link again.'],
  session_invalid: ['Your session is not valid', 'Open your link again.'],
  waiting_denied: ['A host did not let you in', 'You can close this page.'],
  waiting_expired: ['Nobody let you in', 'The waiting room closed before a host admitted you.'],
  network_error: ['Cannot reach the classroom', 'Check your connection and reload the page.'],
  no_token: ['No join link', 'Open the link you were given.'],
};

export const describe = (code: string): [string, string] => MESSAGES[code] ?? ['Cannot join', 'Something went wrong. Reload the page to try again.'];
