import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { App } from '../services/app.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { LocalBus, RedisBus, type Bus } from '../platform/cluster/bus.ts';
import { OrgOrigins } from '../services/orgs.ts';
import { RateLimits } from '../platform/cluster/rate-limit.ts';
import { connectRedis } from '../platform/cluster/redis.ts';
import { allowPrivateTargets, baseUrl as resolveBaseUrl, loadConfig, type Config } from '../platform/config.ts';
import { openDatabase } from '../platform/db/index.ts';
import { migrate } from '../platform/db/migrate.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { deriveKey } from '../platform/crypto.ts';
import { Mailer, MAIL_POLL_MS } from '../services/notifications/mailer.ts';
import { ApiKeys } from '../services/api-keys.ts';
import { Classes } from '../services/classes.ts';
import { Attendance } from '../services/attendance.ts';
import { Polls, VOTER_KEY_PURPOSE } from '../services/polls.ts';
import { Questions } from '../services/questions.ts';
import { ChatLog } from '../services/chat.ts';
import { PLAYBACK_KEY_PURPOSE, Recordings } from '../services/recordings.ts';
import { RecordingNotes } from '../services/recording-notes.ts';
import type { PlanName } from '../core/plans.ts';
import { openTranscriptionEngine, transcriptionMissing, type TranscriptionEngine } from '../platform/ai/asr.ts';
import { openNotesEngine } from '../platform/ai/notes.ts';
import { openStorage } from '../platform/storage/index.ts';
import { Usage } from '../services/usage.ts';
import { Enrollments } from '../services/enrollments.ts';
import { Idempotency } from '../services/idempotency.ts';
import { Invitations } from '../services/invitations.ts';
import { Jobs } from '../services/jobs.ts';
import { JoinLinks } from '../services/join-links.ts';
import { Meetings } from '../services/meetings.ts';
import { Admins } from '../services/admins.ts';
import { WebhookEndpoints } from '../services/webhook-endpoints.ts';
import { Sessions } from '../services/sessions.ts';
import { Tokens } from '../services/tokens.ts';
import { Users } from '../services/users.ts';
import { startHttp } from '../../http/server.ts';
import { parseUserItem } from '../../http/schemas/users.ts';
import { MediaGateway } from '../../http/ws/gateway.ts';
import type { ActorHandler, Cluster } from '../platform/cluster/cluster.ts';
import { LocalCluster } from '../platform/cluster/local-cluster.ts';
import { RedisCluster } from '../platform/cluster/redis-cluster.ts';
import { ActorRuntime } from '../platform/runtime/actor-runtime.ts';
import { Metrics } from '../platform/metrics.ts';
import { startMetricsServer } from '../../http/metrics-server.ts';
import { Outbox } from '../platform/outbox.ts';
import { NetworkCheck } from '../services/live/network-check.ts';
import { TurnRelays } from '../services/live/turn.ts';
import { actorDefinitions, RETENTION_ACTOR } from './actor-definitions.ts';
import { DurableTimers } from '../platform/runtime/timers.ts';
import { Connections } from '../platform/cluster/connections.ts';
import { roomClients } from '../services/live/clients.ts';
import { Rooms } from '../services/live/rooms.ts';
import { MediaRooms } from '../services/live/media-rooms.ts';
import { MediaLoad } from '../../media/load.ts';
import { WorkerPool } from '../../media/workers.ts';
import { mediaAnnouncedAddress } from '../platform/config.ts';
import { routes } from '../../http/routes/index.ts';
import { WebhookDelivery } from '../services/webhooks/delivery.ts';

export interface NodeOptions {
  config?: Config;
  env?: Record<string, string | undefined>;
  overrides?: Partial<Config>;
  clock?: Clock;
  logger?: Logger;
  /** Wraps the actor runtime's handler of cluster messages (the cluster benchmark answers its echo actor there). */
  wrapHandler?: (handler: ActorHandler) => ActorHandler;
}

export interface Node {
  app: App;
  gateway: MediaGateway;
  port: number;
  url: string;
  /** The port of the metrics server when `AULA_METRICS_PORT` is set (otherwise /metrics is on `port`). */
  metricsPort: number | null;
  close(): Promise<void>;
}

/** The secret that seals tokens: AULA_SECRET_KEY, or outside production one generated once into the data folder. */
function secretKey(config: Config, log: Logger): string {
  if (config.AULA_SECRET_KEY) return config.AULA_SECRET_KEY;
  const file = join(config.AULA_DATA_DIR, 'secret.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(config.AULA_DATA_DIR, { recursive: true });
  const key = randomBytes(32).toString('base64url');
  writeFileSync(file, key + '\n', { mode: 0o600 });
  log.warn({ file }, 'AULA_SECRET_KEY is unset: generated a secret key for this data folder');
  return key;
}

/** Starts one server process ("node"): database, Redis, services, job runner, HTTP. */
export async function startNode(opts: NodeOptions = {}): Promise<Node> {
  const config = opts.config ?? loadConfig(opts.env ?? process.env, opts.overrides);
  const log = opts.logger ?? createLogger(config);
  const clock = opts.clock ?? systemClock;
  const database = await openDatabase(config, log);
  const sql = database.sql;
  if (config.AULA_MIGRATE_ON_START) await migrate(sql, log);

  const redis = config.AULA_REDIS_URL ? connectRedis(config.AULA_REDIS_URL, log, 'aula') : null;
  const origin = `${process.pid}:${randomBytes(6).toString('hex')}`;
  const bus: Bus = redis ? new RedisBus(redis, config.AULA_REDIS_PREFIX, origin) : new LocalBus();
  const secret = secretKey(config, log);
  const tokens = new Tokens(secret);

  const cluster: Cluster = redis
    ? new RedisCluster({ redis, sql, prefix: config.AULA_REDIS_PREFIX, log })
    : new LocalCluster({ sql, log });
  let publicBaseUrl: string | undefined;
  // The rooms service is made below, with what it needs; the actor runtime hands it room effects from then on.
  let roomService: Rooms | null = null;
  const outbox = new Outbox(log);
  const metrics = new Metrics();
  const idempotency = new Idempotency(sql, clock, tokens.data);
  const actors = new ActorRuntime({
    sql,
    clock,
    log,
    outbox,
    definitions: actorDefinitions({ roomGraceSeconds: config.AULA_ROOM_GRACE_SECONDS, recordingRetention: (at) => recordings.purgeExpired(at) }),
    env: { baseUrl: () => publicBaseUrl },
    sink: { deliver: (actorId, effects) => roomService?.deliver(actorId, effects) },
    send: (actorId, event) => cluster.send(actorId, event),
    publish: (channel, message) => bus.publish(channel, message),
    storeAnswer: idempotency.storeAnswer,
  });
  cluster.on('releasing', (shard) => actors.releaseShard(shard));
  cluster.on('lost', (shard) => actors.dropShard(shard));
  const timers = new DurableTimers(sql, clock, cluster, log);
  const delivery = new WebhookDelivery({
    sql,
    clock,
    cluster,
    bus,
    log,
    outbox,
    metrics,
    sealer: tokens.data,
    allowPrivate: allowPrivateTargets(config),
    concurrency: config.AULA_WEBHOOK_CONCURRENCY,
    maxInFlight: config.AULA_WEBHOOK_MAX_IN_FLIGHT,
  });

  const rateLimits = new RateLimits(redis, config.AULA_REDIS_PREFIX, clock);
  const apiKeys = new ApiKeys(sql, clock, bus);
  const users = new Users(clock, bus, outbox);
  const classes = new Classes(clock, outbox);
  const clients = roomClients(cluster);
  const meetings = new Meetings(clock, bus, outbox, users, classes, clients);
  const sessions = new Sessions(clock, tokens, meetings, users, clients, () => app.baseUrl);
  const connections = new Connections({ redis, prefix: config.AULA_REDIS_PREFIX, nodeId: cluster.nodeId, log });
  const pool = await startWorkers(config, log);
  const mediaLoad = new MediaLoad({ redis, prefix: config.AULA_REDIS_PREFIX, nodeId: cluster.nodeId, pool, log });
  const storage = await openStorage(config, log);
  const asrMissing = transcriptionMissing(config);
  if (asrMissing) log.info({ why: asrMissing }, 'no transcription engine: recordings get no transcript or notes (docs/ai-notes.md)');
  const asr = asrMissing ? null : openTranscriptionEngine(config, { log });
  const recordingNotes = new RecordingNotes({
    sql,
    clock,
    outbox,
    storage,
    bus,
    log,
    asr,
    notes: openNotesEngine({
      engine: config.AULA_NOTES_ENGINE,
      url: config.AULA_NOTES_URL,
      key: config.AULA_NOTES_KEY,
      model: config.AULA_NOTES_MODEL,
      onFallback: (reason) => log.warn({ reason }, 'the notes model\'s answer was unusable: the offline notes are kept instead'),
    }),
    ...(asrMissing ? { unconfigured: asrMissing } : {}),
  });
  const recordings = new Recordings({
    afterReady: (tx, orgId, recordingId, at) => recordingNotes.afterReady(tx, orgId, recordingId, at),
    sql,
    clock,
    outbox,
    meetings,
    rooms: clients,
    storage,
    playbackKey: deriveKey(secret, PLAYBACK_KEY_PURPOSE),
    spoolDir: join(config.AULA_DATA_DIR, 'recording-spool'),
    baseUrl: () => app.baseUrl,
    log,
    bus,
    alive: (nodeId) => mediaLoad.alive(nodeId),
  });
  // live captions: the organization's as for AI notes (plan, switch, engine, language); nothing is written
  const liveCaptions = async (meetingId: string): Promise<{ engine: TranscriptionEngine; language: string } | string> => {
    const [org] = await sql<{ plan: PlanName; aiNotes: boolean; language: string }[]>`select o.plan, o.ai_notes, o.language from meetings m join organizations o on o.id = m.org_id where m.id = ${meetingId}`;
    if (!org) return 'The meeting is not known.';
    const why = recordingNotes.unavailable(org);
    return why ?? (asr ? { engine: asr, language: org.language } : 'This server has no transcription engine.');
  };
  const mediaRooms = pool
    ? new MediaRooms({
        nodeId: cluster.nodeId,
        pool,
        load: mediaLoad,
        rooms: clients,
        deliver: (meetingId, effects) => roomService?.deliver(meetingId, effects),
        log,
        capacity: config.AULA_MEDIA_CONSUMERS_PER_WORKER,
        maxIncomingBitrate: config.AULA_MEDIA_MAX_INCOMING_BITRATE,
        initialOutgoingBitrate: config.AULA_MEDIA_INITIAL_OUTGOING_BITRATE,
        recordings,
        captions: liveCaptions,
      })
    : null;
  const turn = config.AULA_TURN_URLS?.length && config.AULA_TURN_SECRET ? new TurnRelays({ urls: config.AULA_TURN_URLS, secret: config.AULA_TURN_SECRET, clock, sql, log }) : null;
  const networkCheck = new NetworkCheck({ pool, turn, log });
  const chat = new ChatLog(clock, meetings);
  roomService = new Rooms({
    sql,
    clients,
    cluster,
    bus,
    connections,
    meetings,
    load: mediaLoad,
    media: mediaRooms,
    log,
    sweepMs: redis ? 2000 : 0,
    voterKey: deriveKey(secret, VOTER_KEY_PURPOSE),
    turn,
    chat,
    recordings,
    captionsUnavailable: async (meetingId) => {
      const captions = await liveCaptions(meetingId);
      return typeof captions === 'string' ? captions : null;
    },
    signaled: (type, answer) => metrics.mediaSignal(type, answer),
  });
  const app: App = {
    config,
    log,
    clock,
    database,
    sql,
    redis,
    bus,
    rateLimits,
    cluster,
    rooms: clients,
    connections,
    media: pool && mediaRooms ? { pool, rooms: mediaRooms } : null,
    mediaLoad,
    actors,
    timers,
    delivery,
    outbox,
    tokens,
    mailer: new Mailer(sql, clock, log, config),
    metrics,
    baseUrl: '',
    services: {
      apiKeys,
      users,
      classes,
      meetings,
      enrollments: new Enrollments(clock, outbox, users, classes),
      attendance: new Attendance(meetings, classes),
      polls: new Polls(meetings),
      questions: new Questions(meetings),
      chat,
      recordings,
      recordingNotes,
      usage: new Usage(),
      invitations: new Invitations(clock, users, meetings),
      joinLinks: new JoinLinks(clock, tokens, users, meetings),
      sessions,
      jobs: new Jobs(sql, clock, bus, users, log, parseUserItem),
      idempotency,
      admins: new Admins(sql, clock, bus),
      orgOrigins: new OrgOrigins(clock, bus),
      webhookEndpoints: new WebhookEndpoints({ clock, sealer: tokens.data, cluster, rateLimits, allowPrivate: allowPrivateTargets(config), log }),
      rooms: roomService,
      networkCheck,
    },
  };
  // Every bus subscription is made before the subscriber connection is awaited, so none misses a message.
  const gateway = new MediaGateway(app);
  if (bus instanceof RedisBus) await bus.ready();
  // each message an owner's actor handles is timed, by actor (the id's prefix: its definition's name)
  const timed: ActorHandler = (msg, shard, epoch) => {
    const began = performance.now();
    const actor = msg.actorId.slice(0, msg.actorId.indexOf(':'));
    const done = () => metrics.actorEvent(actor, (performance.now() - began) / 1000);
    const out = actors.handle(msg, shard, epoch);
    out.then(done, done);
    return out;
  };
  metrics.observe({
    sockets: () => gateway.connections,
    media: () => mediaRooms?.counts() ?? Promise.resolve({ rooms: 0, participants: 0, producers: 0, consumers: 0, relayed: 0 }),
    workers: () => pool?.all().map((w) => ({ index: w.index, cpu: w.cpu, consumers: w.consumers })) ?? [],
    mailboxDepth: () => actors.mailboxDepth(),
    shardsOwned: () => cluster.owned().size,
    clusterNodes: async () => (await cluster.placement()).nodes.length,
  });
  await cluster.start(opts.wrapHandler ? opts.wrapHandler(timed) : timed);
  await mediaLoad.start();
  timers.start();
  app.mailer.start(MAIL_POLL_MS);
  delivery.start(config.AULA_WEBHOOK_POLL_MS);

  const http = await startHttp(app, routes, { host: config.AULA_HOST, port: config.AULA_PORT, extend: (server) => gateway.register(server) });
  const metricsServer = config.AULA_METRICS_PORT === undefined ? null : await startMetricsServer(app, config.AULA_HOST, config.AULA_METRICS_PORT);
  app.baseUrl = resolveBaseUrl(config, http.port);
  publicBaseUrl = app.baseUrl;
  app.services.jobs.onRun = (kind, outcome, seconds) => metrics.jobRun(kind, outcome, seconds);
  app.services.jobs.handle(
    'recording.compose',
    (input, signal) => recordings.composeJob(String(input.recordingId), signal),
    (input, why) => recordings.composeGaveUp(String(input.recordingId), why),
  );
  // a node that cannot transcribe leaves the notes jobs to those that can
  if (!asrMissing) app.services.jobs.handle('recording.notes', (input, signal) => recordingNotes.run(input, signal), (input, why) => recordingNotes.gaveUp(input, why));
  app.services.jobs.start(config.AULA_JOB_POLL_MS);
  apiKeys.start(log);
  // Retention (delivery log, events, idempotency records, sessions) is the maintenance actor's hourly
  // durable timer; every node makes sure the actor exists, until one attempt gets through.
  const ensureRetention = setInterval(() => {
    cluster.ask(RETENTION_ACTOR, { type: 'ENSURE' }).then(
      () => clearInterval(ensureRetention),
      (err) => log.debug({ err }, 'retention actor not reachable yet'),
    );
  }, 1000);
  ensureRetention.unref();
  const passivate = setInterval(() => actors.passivateIdle(10 * 60_000), 60_000);
  passivate.unref();
  log.info({ port: http.port, baseUrl: app.baseUrl, embedded: database.embedded, redis: !!redis }, 'aula node listening');

  let closed = false;
  return {
    app,
    gateway,
    port: http.port,
    metricsPort: metricsServer?.port ?? null,
    url: app.baseUrl,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(ensureRetention);
      clearInterval(passivate);
      rateLimits.close();
      // Drain: close the server (its sockets go; clients reconnect to another node), hand the
      // shards over, then the rest. Ending sockets one by one with 4503 first crashed uWS on close.
      roomService.stop();
      await mediaLoad.withdraw();
      http.close();
      await metricsServer?.close();
      await gateway.closeAll();
      mediaRooms?.close();
      networkCheck.close();
      await pool?.close();
      timers.stop();
      await delivery.stop();
      await cluster.stop({ drain: true });
      actors.stopAll();
      await app.services.jobs.stop();
      await apiKeys.stop();
      await app.mailer.stop();
      await bus.close();
      redis?.disconnect();
      await database.close();
    },
  };
}

/** The node's mediasoup workers; a node whose worker cannot start runs without media (and says so). */
async function startWorkers(config: Config, log: Logger): Promise<WorkerPool | null> {
  if (config.AULA_MEDIA_WORKERS === 0) return null;
  const pool = new WorkerPool({
    size: config.AULA_MEDIA_WORKERS,
    listenIp: config.AULA_MEDIA_LISTEN_IP,
    announcedIp: mediaAnnouncedAddress(config),
    portMin: config.AULA_MEDIA_PORT_MIN,
    portMax: config.AULA_MEDIA_PORT_MAX,
    logLevel: config.AULA_MEDIA_LOG_LEVEL,
    log,
  });
  try {
    await pool.start();
    return pool;
  } catch (err) {
    await pool.close();
    log.error({ err }, 'mediasoup workers did not start: this node runs without media (see media/README-worker.md)');
    return null;
  }
}
