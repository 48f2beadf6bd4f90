import type { Redis } from 'ioredis';
import type { Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import type { Cluster } from '../platform/cluster/cluster.ts';
import type { Connections } from '../platform/cluster/connections.ts';
import type { RoomClients } from './live/clients.ts';
import type { NetworkCheck } from './live/network-check.ts';
import type { Rooms } from './live/rooms.ts';
import type { MediaRooms } from './live/media-rooms.ts';
import type { MediaLoad } from '../../media/load.ts';
import type { WorkerPool } from '../../media/workers.ts';
import type { ActorRuntime } from '../platform/runtime/actor-runtime.ts';
import type { DurableTimers } from '../platform/runtime/timers.ts';
import type { WebhookDelivery } from './webhooks/delivery.ts';
import type { Outbox } from '../platform/outbox.ts';
import type { Metrics } from '../platform/metrics.ts';
import type { RateLimits } from '../platform/cluster/rate-limit.ts';
import type { Config } from '../platform/config.ts';
import type { Database, Sql } from '../platform/db/index.ts';
import type { Logger } from '../platform/logger.ts';
import type { Mailer } from './notifications/mailer.ts';
import type { ApiKeys } from './api-keys.ts';
import type { Attendance } from './attendance.ts';
import type { Polls } from './polls.ts';
import type { Questions } from './questions.ts';
import type { ChatLog } from './chat.ts';
import type { Recordings } from './recordings.ts';
import type { RecordingNotes } from './recording-notes.ts';
import type { Usage } from './usage.ts';
import type { Classes } from './classes.ts';
import type { Enrollments } from './enrollments.ts';
import type { Idempotency } from './idempotency.ts';
import type { Invitations } from './invitations.ts';
import type { Jobs } from './jobs.ts';
import type { JoinLinks } from './join-links.ts';
import type { Meetings } from './meetings.ts';
import type { OrgOrigins } from './orgs.ts';
import type { Admins } from './admins.ts';
import type { WebhookEndpoints } from './webhook-endpoints.ts';
import type { Sessions } from './sessions.ts';
import type { Tokens } from './tokens.ts';
import type { Users } from './users.ts';

/** Everything a node runs with, built once at start and handed to the HTTP layer. */
export interface App {
  config: Config;
  log: Logger;
  clock: Clock;
  database: Database;
  sql: Sql;
  redis: Redis | null;
  bus: Bus;
  rateLimits: RateLimits;
  /** Node registry, shards and the one way to reach an actor (`cluster.ask` / `cluster.send`). */
  cluster: Cluster;
  /** The typed clients of the meeting and waiting-room actors, one method per event (`rooms.meeting.end(meetingId, { byApi: true })`). */
  rooms: RoomClients;
  /** The room sockets open on this node. */
  connections: Connections;
  /** This node's mediasoup workers and the rooms whose media it hosts (null when AULA_MEDIA_WORKERS is 0 or the worker cannot start). */
  media: { pool: WorkerPool; rooms: MediaRooms } | null;
  /** Every media node's load, for placing rooms. */
  mediaLoad: MediaLoad;
  actors: ActorRuntime;
  timers: DurableTimers;
  /** Fans events out to webhook endpoints and sends them (src/services/webhooks/delivery.ts). */
  delivery: WebhookDelivery;
  /** Where events are written, in the transaction of the change they report. */
  outbox: Outbox;
  tokens: Tokens;
  /** Sends email_outbox rows (AULA_SMTP_URL). */
  mailer: Mailer;
  /** This node's Prometheus metrics (src/metrics.ts). */
  metrics: Metrics;
  baseUrl: string;
  services: {
    apiKeys: ApiKeys;
    users: Users;
    classes: Classes;
    meetings: Meetings;
    enrollments: Enrollments;
    /** Attendance reports of meetings and classes (written by the meeting actors). */
    attendance: Attendance;
    /** Polls and quizzes, and Q&A, of meetings (written by the meeting actors). */
    polls: Polls;
    questions: Questions;
    /** The rooms' chat (its rows; the rooms service tells the room). */
    chat: ChatLog;
    /** Recordings: started through the meeting actors, composed by jobs, played through signed links. */
    recordings: Recordings;
    /** Transcripts and lecture notes of recordings (the recording.notes jobs). */
    recordingNotes: RecordingNotes;
    /** Usage per day against the plan's limits. */
    usage: Usage;
    invitations: Invitations;
    joinLinks: JoinLinks;
    sessions: Sessions;
    jobs: Jobs;
    idempotency: Idempotency;
    /** Signed-in organization owners and admins, and their sessions. */
    admins: Admins;
    /** Each organization's allowed origins (who may frame the room page), by meeting slug. */
    orgOrigins: OrgOrigins;
    /** Webhook endpoints, their secrets, test events, delivery log and redeliveries. */
    webhookEndpoints: WebhookEndpoints;
    /** Room sockets: joining, commands, media signaling relayed to the room's media node. */
    rooms: Rooms;
    /** The pre-join check of the paths to the media server (UDP, TCP, relay). */
    networkCheck: NetworkCheck;
  };
}
