import type { z } from 'zod';
/**
 * The one error catalog. Every failure the service reports, over HTTP or the media gateway,
 * is one of these codes, rendered as `{ error: { code, message, details }, requestId }`.
 * `retryable` follows the spec's client guidance, one rule for every code: the same request may be sent
 * again as it is on a 5xx, a 429 (after Retry-After), a 408 (none here) and 409 `idempotency_in_progress`,
 * and on nothing else, so a refusal that waits for something to change (a host's admission, a free
 * place) is not retryable.
 */
export const errorCatalog = {
  // request shape
  bad_request: { status: 400, message: 'The request is not valid.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  validation_failed: { status: 400, message: 'One or more fields are invalid.' },
  idempotency_key_invalid: { status: 400, message: 'Idempotency-Key must be 1 to 255 printable ASCII characters.' },
  payload_too_large: { status: 413, message: 'The request body is larger than this route accepts.' },
  unsupported_media_type: { status: 415, message: 'Send the request body as application/json.' },
  route_not_found: { status: 404, message: 'No route matches this path.' },
  method_not_allowed: { status: 405, message: 'This path does not accept that method.' },

  // authentication and authorization
  auth_missing: { status: 401, message: 'Send an API key as "Authorization: Bearer <key>".' },
  auth_malformed: { status: 401, message: 'The Authorization header is not a Bearer credential of the expected form.' },
  api_key_invalid: { status: 401, message: 'The API key is not known.' },
  api_key_revoked: { status: 401, message: 'The API key has been revoked.' },
  api_key_expired: { status: 401, message: 'The API key was rolled and its overlap has ended; use the key that replaced it.' },
  insufficient_scope: { status: 403, message: 'The API key lacks the scope this operation needs.' },
  session_invalid: { status: 401, message: 'The meeting session token is not valid.' },
  session_expired: { status: 401, message: 'The meeting session can no longer be refreshed; open a new join link.' },
  session_revoked: { status: 401, message: 'The meeting session was revoked.' },
  session_wrong_meeting: { status: 403, message: 'The meeting session is valid only on its own meeting\'s routes.' },
  access_token_expired: { status: 401, message: 'The accessToken has expired; refresh the meeting session.' },
  forbidden: { status: 403, message: 'Only a host or cohost of the room may do this.' },
  invalid_credentials: { status: 401, message: 'The organization, email or password is not right.' },
  admin_disabled: { status: 403, message: 'This owner or admin account is disabled.' },
  admin_session_missing: { status: 401, message: 'Sign in first: send the aula_session cookie or "Authorization: Bearer <sessionToken>".' },
  admin_session_invalid: { status: 401, message: 'The admin session token is not known.' },
  admin_session_expired: { status: 401, message: 'The admin session has expired; sign in again.' },
  admin_session_revoked: { status: 401, message: 'The admin session was signed out or its owner or admin disabled; sign in again.' },
  csrf_failed: { status: 403, message: 'A cookie-authenticated request that changes something must carry the session\'s X-CSRF-Token header.' },
  org_mismatch: { status: 403, message: 'The signed-in admin belongs to another organization.' },

  // limits
  rate_limited: { status: 429, message: 'Too many requests; retry after the time given.', retryable: true },
  plan_feature_unavailable: { status: 402, message: 'The organization\'s plan does not include this feature.' },
  limit_reached: { status: 409, message: 'A limit of the organization has been reached.' },

  // idempotency
  idempotency_in_progress: { status: 409, message: 'A request with this Idempotency-Key is still being processed.', retryable: true },
  idempotency_key_reused: { status: 422, message: 'This Idempotency-Key was used with a different request.' },

  // resources
  not_found: { status: 404, message: 'The resource does not exist.' },
  user_not_found: { status: 404, message: 'No user with this id or externalId in the organization.' },
  meeting_not_found: { status: 404, message: 'No meeting with this id or externalId in the organization.' },
  class_not_found: { status: 404, message: 'No class with this id or externalId in the organization.' },
  recording_not_found: { status: 404, message: 'No recording with this id in the organization.' },
  storage_quota_exceeded: { status: 403, message: 'The organization\'s recordings use all the storage its plan includes; delete some first.' },
  playback_link_invalid: { status: 403, message: 'This playback link is not valid or has expired; ask for a new one.' },
  job_not_found: { status: 404, message: 'No job with this id in the organization.' },
  enrollment_not_found: { status: 404, message: 'The user is not enrolled in this class.' },
  invitation_not_found: { status: 404, message: 'The user is not invited to this meeting.' },
  webhook_not_found: { status: 404, message: 'No webhook endpoint with this id in the organization.' },
  delivery_not_found: { status: 404, message: 'No webhook delivery with this id in the organization.' },
  meeting_exists: { status: 409, message: 'A meeting with this externalId already exists.' },
  slug_taken: { status: 409, message: 'This slug is already in use.' },
  admin_exists: { status: 409, message: 'An owner or admin with this email already exists in the organization.' },
  admin_not_found: { status: 404, message: 'No owner or admin with this id in the organization.' },
  owner_required: { status: 403, message: 'Only an owner of the organization may do this.' },
  cannot_disable_self: { status: 409, message: 'You cannot disable yourself; ask another owner.' },
  last_owner: { status: 409, message: 'This is the organization\'s last active owner: make another owner first.' },
  admin_invitation_not_found: { status: 404, message: 'No admin invitation with this id in the organization.' },
  admin_invitation_invalid: { status: 401, message: 'This invitation link is not valid; ask the owner who invited you for a new one.' },
  admin_invitation_expired: { status: 410, message: 'This invitation link has expired (links last 24 hours); ask the owner who invited you for a new one.' },
  admin_invitation_used: { status: 409, message: 'This invitation was already accepted; sign in instead.' },
  admin_invitation_revoked: { status: 410, message: 'This invitation was revoked; ask the owner who invited you for a new one.' },
  api_key_not_found: { status: 404, message: 'No API key with this id in the organization.' },
  invalid_state: { status: 409, message: 'The resource is not in a state that allows this operation.' },
  ai_notes_unavailable: { status: 409, message: 'Transcripts and notes cannot be made for this organization now; the message says why.' },
  role_not_allowed: { status: 403, message: 'The requested room role exceeds what the user\'s organization role allows.' },

  // waiting room
  waiting_not_admitted: { status: 409, message: 'Still waiting for a host to admit you; ask again once the waiting-room status says ADMITTED.' },
  waiting_denied: { status: 403, message: 'A host declined the request to join.' },
  waiting_expired: { status: 410, message: 'The waiting-room entry expired or was left.' },
  participant_removed: { status: 403, message: 'A host removed this participant from the meeting.' },
  meeting_locked: { status: 403, message: 'A host locked the meeting: nobody new may join until it is unlocked.' },
  meeting_full: { status: 409, message: 'The meeting has as many participants as it allows; try again once someone has left.' },
  plan_limit_reached: { status: 403, message: 'The organization has as many meetings live as its plan allows; end one first.' },

  // in the room (media gateway)
  produce_not_allowed: { status: 403, message: 'Your room role may not send this kind of media in this meeting.' },
  muted_by_host: { status: 403, message: 'A host muted your microphone; ask to unmute and wait until a host allows it.' },
  chat_not_allowed: { status: 403, message: 'The meeting\'s chat settings do not let you send this message.' },
  floor_required: { status: 403, message: 'This is a lecture: only hosts speak until a host gives you the floor.' },
  command_rate_limited: { status: 429, message: 'Too many commands on this connection; slow down.', retryable: true },
  room_busy: { status: 503, message: 'The room has too many commands waiting; retry shortly.', retryable: true },
  media_unavailable: { status: 503, message: 'The room\'s media is starting or moving to another server; retry shortly.', retryable: true },
  media_not_ready: { status: 409, message: 'Join the room\'s media first (media-join), then create transports and send media-ready.' },

  // joining
  join_token_invalid: { status: 401, message: 'The join token is not valid.' },
  metrics_token_invalid: { status: 401, message: 'Send the metrics token as "Authorization: Bearer <token>".' },
  join_token_expired: { status: 410, message: 'The join link has expired.' },
  join_token_used: { status: 409, message: 'The single-use join link was already used.' },
  join_token_revoked: { status: 410, message: 'The join link was revoked.' },
  user_deactivated: { status: 403, message: 'The user was deactivated.' },
  not_a_member: { status: 403, message: 'The user is not a member of the organization.' },
  not_enrolled: { status: 403, message: 'Only students enrolled in the class may join this meeting.' },
  not_invited: { status: 403, message: 'Only invited users may join this meeting.' },
  meeting_ended: { status: 410, message: 'The meeting has ended or was cancelled.' },

  // server
  internal_error: { status: 500, message: 'Something went wrong on our side.', retryable: true },
  service_unavailable: { status: 503, message: 'The service is temporarily unavailable.', retryable: true },
  actor_unavailable: { status: 503, message: 'The live resource is moving between servers; retry shortly.', retryable: true },
} as const satisfies Record<string, { status: number; message: string; retryable?: boolean }>;

export type ErrorCode = keyof typeof errorCatalog;

export class AppError extends Error {
  override name = 'AppError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    opts: { message?: string; details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(opts.message ?? errorCatalog[code].message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.status = errorCatalog[code].status;
    this.details = opts.details ?? {};
    this.headers = opts.headers ?? {};
  }

  toBody(requestId: string) {
    return { error: { code: this.code, message: this.message, details: this.details }, requestId };
  }
}


/** A zod failure as `validation_failed`, naming every offending field, each of its messages once (one URL can fail two checks with the same words). */
export function validationError(error: z.ZodError, where: 'path' | 'query' | 'body' | 'item'): AppError {
  const seen = new Set<string>();
  const fields = error.issues
    .map((i) => ({ field: i.path.length ? i.path.map(String).join('.') : '(root)', in: where, code: i.code, message: i.message }))
    .filter((f) => {
      const key = `${f.field}\u0000${f.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .slice(0, 50);
  return new AppError('validation_failed', { details: { fields } });
}

/** `validation_failed` for one body field a rule refused after the schema passed (a past start, a plan's cap). */
export function invalidField(field: string, message: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError('validation_failed', { message, details: { fields: [{ field, in: 'body', code: 'custom', message, ...extra }] } });
}
