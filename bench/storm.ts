/**
 * The join storm: `npm run bench -- --scenario storm [options]` (bench/run.ts hands over here).
 *
 * N students arrive open-loop over S seconds (student i is due at t0 + i*S/N whatever became of the
 * ones before) and each takes the whole path a student takes: the customer's backend mints the join
 * link, the page exchanges it, in a room with a waiting room waits to be admitted and asks for the room
 * token, opens the room socket and waits for `joined`; in the rooms whose teacher sends audio, every Nth
 * student (--media-sample, in a process of its own) then joins the room's media with mediasoup-client on
 * libwebrtc until the first RTP packet of the teacher's audio. Two
 * nodes in their own processes (same Postgres and Redis) serve HTTP and the media gateway; requests
 * and sockets are spread over both, round robin, as a load balancer would. The storm runs without and
 * with one socket flooding commands in a room of its own, and the other rooms' per-step p99 are compared.
 * See bench/README.md, "The join storm scenario".
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import type WebSocket from 'ws';
import { desiredOwners, readPlacement } from '../src/platform/cluster/placement.ts';
import { pgOptions, type Sql } from '../src/platform/db/index.ts';
import { benchArgs } from './lib/args.ts';
import { snapshot, usage, type CpuUsage } from './lib/cpu.ts';
import { startRpcChild, type RpcChild } from './lib/rpc.ts';
import { REDIS_URL, scratchBackends } from './lib/scratch.ts';
import { Nodes } from './lib/storm-client.ts';
import { epochNow, inMediaSample, leaveAll, runSchedule, spread, STEPS, type Step, type StudentContext, type StudentRecord } from './lib/storm-student.ts';
import { cleanup, cleanups } from './lib/cleanup.ts';

const USAGE = `npm run bench -- --scenario storm [options]

  --students N        students in each storm                                     [2000]
  --seconds S         they arrive evenly over S seconds, open loop               [60]
  --rooms N           rooms (live classes of one class each, a teacher sending audio) [40]
  --waiting-rooms N   how many of the rooms have a waiting room (the teacher admits) [10]
  --audio-rooms N     how many of the rooms have their teacher sending audio      [10]
  --media-sample N    every Nth student of those rooms also joins the media over WebRTC
                      and waits for the first RTP packet of the teacher's audio (0: none) [5]
  --flood MODE        off, on or both: a socket flooding commands in a room of its own
                      during the storm; both runs the storm without, then with     [both]
  --flood-rate N      commands a second the flooding socket sends                [1000]
  --flood-reconnect on|off  the flooder opens its socket again at once when closed [on]
  --rounds N          with --flood both: N pairs of storms, off,on then on,off, … [1]
  --warmup N          students of an unrecorded storm first, at the same rate (0: none) [200]
  --keys N            API keys the customer's backend mints with                 [8]
  --connections N     HTTP keep-alive connections per node (undici)           [64]
  --media-workers N   mediasoup workers per node                               [1]
  --step-timeout S    a step that takes longer is an error                       [30]
  --leave-seconds S   after a storm, the students leave evenly over S seconds     [10]
  --json              print the results as JSON on stdout (the report goes to stderr)
  --out FILE          JSON results                          [bench/results/storm-<time>.json]

Environment: AULA_BENCH_DATABASE_URL (admin URL, a database is created and dropped), AULA_BENCH_REDIS_URL.`;

const { opt, int } = benchArgs(
  USAGE,
  {
    students: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '60' },
    rooms: { type: 'string', default: '40' },
    'waiting-rooms': { type: 'string', default: '10' },
    'audio-rooms': { type: 'string', default: '10' },
    'media-sample': { type: 'string', default: '5' },
    'leave-seconds': { type: 'string', default: '10' },
    flood: { type: 'string', default: 'both' },
    'flood-rate': { type: 'string', default: '1000' },
    'flood-reconnect': { type: 'string', default: 'on' },
    rounds: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '200' },
    keys: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    'media-workers': { type: 'string', default: '1' },
    'step-timeout': { type: 'string', default: '30' },
    json: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
  'storm',
);
const studentCount = int('students', opt.students, 1);
const seconds = int('seconds', opt.seconds, 1);
const roomCount = int('rooms', opt.rooms, 1);
const waitingRooms = int('waiting-rooms', opt['waiting-rooms'], 0);
const audioRoomCount = int('audio-rooms', opt['audio-rooms'], 0);
const sampleEvery = int('media-sample', opt['media-sample'], 0);
const leaveMsOption = int('leave-seconds', opt['leave-seconds'], 0) * 1000;
const floodRate = int('flood-rate', opt['flood-rate'], 1);
const rounds = int('rounds', opt.rounds, 1);
const warmupCount = int('warmup', opt.warmup, 0);
const keyCount = int('keys', opt.keys, 1);
const httpConnections = int('connections', opt.connections, 1);
const mediaWorkers = int('media-workers', opt['media-workers'], 1);
const stepTimeoutMs = int('step-timeout', opt['step-timeout'], 1) * 1000;
if (!['off', 'on', 'both'].includes(opt.flood) || !['on', 'off'].includes(opt['flood-reconnect'])) {
  console.error(`--flood is off, on or both; --flood-reconnect on or off\n\n${USAGE}`);
  process.exit(2);
}
if (waitingRooms > roomCount || audioRoomCount > roomCount) {
  console.error('--waiting-rooms and --audio-rooms cannot exceed --rooms');
  process.exit(2);
}
// spread over the rooms; with the defaults (10 and 10 of 40) rooms 0, 4, 8, … carry audio and rooms 2, 6, 10, … have a waiting room
const audioRooms = spread(audioRoomCount, roomCount, 0);
const waitingRoomSet = spread(waitingRooms, roomCount, Math.floor(roomCount / Math.max(1, waitingRooms) / 2));
const floodReconnect = opt['flood-reconnect'] === 'on';
const asJson = opt.json;

const here = new URL('.', import.meta.url).pathname;
const NODE = join(here, 'servers/cluster-node.ts');
const TEACHERS = join(here, 'servers/storm-teachers.ts');
const FLOODER = join(here, 'servers/storm-flooder.ts');


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lines: string[] = [];
const say = (s: string) => {
  lines.push(s);
  (asJson ? console.error : console.log)(s);
};
const bump = (o: Record<string, number>, k: string) => (o[k] = (o[k] ?? 0) + 1);

/** Nearest-rank percentile. */
function pct(sorted: ArrayLike<number>, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
/** Other processes (other sessions, builds) using more than this many cores during a storm make it noisy. */
const NOISY_CORES = 0.25;
const fmtMs = (v: number) => (Number.isNaN(v) ? '-' : v >= 100 ? `${Math.round(v)} ms` : v >= 10 ? `${v.toFixed(1)} ms` : `${v.toFixed(2)} ms`);

// ---- steps ----------------------------------------------------------------------------------------

const STEP_WHAT: Record<Step, string> = {
  mint: 'POST /public/meetings/:id/join-links by the backend (API key)',
  exchange: 'POST /join-tokens/exchange',
  admission: 'waiting rooms only: the waiting socket (accessToken) opened until `admitted` (the teacher admits at once)',
  'room token': 'waiting rooms only: POST /meetings/:slug/token',
  'ws join': 'room socket (mediaToken) opened until `joined`',
  'first packet': 'media sample only: from `joined` to the first RTP packet of the teacher\'s audio (media-join, 2 transports, media-ready, consume, consumer-resume, ICE+DTLS)',
};

// ---- the run's database, Redis prefix, nodes, teachers and flooder --------------------------------

const { dbUrl, redisPrefix: prefix } = await scratchBackends(cleanups);
const redis = new Redis(REDIS_URL);
cleanups.push(async () => redis.disconnect());
const sql = postgres(dbUrl.toString(), { ...pgOptions, max: 2 }) as unknown as Sql;
cleanups.push(async () => {
  await sql.end({ timeout: 1 });
});
// reads the WAL by table (walByTable); the bench connects as a superuser, and without it that figure is left out
await sql`create extension if not exists pg_walinspect`.catch((err: Error) => say(`(pg_walinspect not available: ${err.message})`));

const nodeEnv = {
  AULA_ENV: 'production',
  AULA_HOST: '127.0.0.1',
  AULA_PORT: '0',
  AULA_DATABASE_URL: dbUrl.toString(),
  AULA_DATABASE_POOL: '10',
  AULA_REDIS_URL: REDIS_URL,
  AULA_REDIS_PREFIX: prefix,
  AULA_SECRET_KEY: randomBytes(32).toString('base64url'),
  AULA_LOG_LEVEL: 'warn',
  // one proxy hop: every student's requests carry their own X-Forwarded-For (the exchange is limited per client IP)
  AULA_TRUST_PROXY: '1',
  AULA_MEDIA_WORKERS: String(mediaWorkers),
  AULA_MEDIA_LISTEN_IP: '127.0.0.1',
  AULA_MEDIA_PORT_MIN: '47000',
  AULA_MEDIA_PORT_MAX: '47999',
};

interface NodeLogs {
  byMsg: Record<string, number>;
  examples: string[];
}

interface NodeInfo {
  nodeId: string;
  port: number;
  url: string;
  pid: number;
}

async function waitSettled(ms: RpcChild<NodeInfo>[], timeoutMs = 30_000): Promise<void> {
  const ids = ms.map((m) => m.info.nodeId).sort();
  const desired = desiredOwners(ids);
  const until = performance.now() + timeoutMs;
  for (;;) {
    const p = await readPlacement(redis, sql, prefix);
    if (p.nodes.map((m) => m.id).sort().join() === ids.join() && p.shards.every((s) => s.owner === desired[s.shard])) return;
    if (performance.now() > until) throw new Error('the shard placement did not settle');
    await sleep(100);
  }
}

/** mediasoup worker processes of a node (its children named mediasoup-worker). */
function workerPids(parent: number): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && comm.startsWith('mediasoup-work')) out.push(Number(pid));
    } catch {
      // gone
    }
  }
  return out;
}

/** Commits and rolled-back transactions in the run's database and WAL written (whole server), for per-student costs. */
async function dbCounters(): Promise<DbCounters> {
  const [row] = await sql<{ commits: string; rollbacks: string; wal: string; lsn: string }[]>`
    select xact_commit::text as commits, xact_rollback::text as rollbacks, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as wal, pg_current_wal_flush_lsn()::text as lsn
    from pg_stat_database where datname = current_database()`;
  return { commits: Number(row!.commits), rollbacks: Number(row!.rollbacks), walBytes: Number(row!.wal), lsn: row!.lsn };
}
interface DbCounters {
  commits: number;
  rollbacks: number;
  walBytes: number;
  lsn: string;
}
interface DbDelta {
  commits: number;
  rollbacks: number;
  walBytes: number;
  /** WAL records of the run's database between the two points, by table (pg_walinspect; null when it could not be read) */
  walByTable: WalByTable | null;
}
/** Bytes of WAL records (full-page images included) that touched the actors' state, and the run's database as a whole. */
interface WalByTable {
  snapshots: number;
  deltas: number;
  database: number;
}
const dbDelta = async (a: DbCounters, b: DbCounters): Promise<DbDelta> => ({
  commits: b.commits - a.commits,
  rollbacks: b.rollbacks - a.rollbacks,
  walBytes: b.walBytes - a.walBytes,
  walByTable: await walByTable(a.lsn, b.lsn),
});

/**
 * The WAL between two positions, attributed to the tables of this run's database by the first block each
 * record touches (pg_walinspect reads the server's WAL files; other databases' records are left out, so
 * other sessions' writes do not count here). A table's figure includes its indexes and its TOAST table.
 * Commit records touch no block and are in neither figure. Null when the server already recycled that WAL
 * (a checkpoint during a long storm on a busy server).
 */
async function walByTable(from: string, to: string): Promise<WalByTable | null> {
  const lsn = (l: string) => l.split('/').reduce((a, h) => (a << 32n) + BigInt(`0x${h}`), 0n);
  if (lsn(to) <= lsn(from)) return { snapshots: 0, deltas: 0, database: 0 };
  try {
    const [r] = await sql<{ snapshots: string; deltas: string; database: string }[]>`
      with heaps as (
        select relname::text as tbl, oid, reltoastrelid from pg_class where relname in ('actor_snapshots', 'actor_deltas') and relkind = 'r'
      ), tabs as (
        select tbl, oid from heaps union all select tbl, reltoastrelid from heaps where reltoastrelid <> 0
      ), rels as (
        select tbl, pg_relation_filenode(oid)::text as node from tabs
        union all select t.tbl, pg_relation_filenode(x.indexrelid)::text from tabs t join pg_index x on x.indrelid = t.oid
      ), recs as (
        select record_length, (regexp_match(block_ref, 'rel [0-9]+/([0-9]+)/([0-9]+)')) as m
        from pg_get_wal_records_info(${from}::pg_lsn, ${to}::pg_lsn) where block_ref is not null
      ), mine as (
        select record_length, m[2] as node from recs where m[1] = (select oid::text from pg_database where datname = current_database())
      )
      select coalesce(sum(record_length) filter (where rels.tbl = 'actor_snapshots'), 0)::text as snapshots,
        coalesce(sum(record_length) filter (where rels.tbl = 'actor_deltas'), 0)::text as deltas,
        coalesce(sum(record_length), 0)::text as database
      from mine left join rels on rels.node = mine.node`;
    return { snapshots: Number(r!.snapshots), deltas: Number(r!.deltas), database: Number(r!.database) };
  } catch (err) {
    say(`(WAL by table not read: ${(err as Error).message})`);
    return null;
  }
}

/** The storm's meeting actors' persisted state, and the whole actor tables (with indexes and TOAST). */
async function actorState(actorIds: string[]): Promise<PhaseResult['meetingSnapshots']> {
  const [snap] = await sql<{ n: number; avgBytes: number; maxBytes: number }[]>`
    select count(*)::int as n, coalesce(avg(octet_length(snapshot::text)), 0)::int as "avgBytes", coalesce(max(octet_length(snapshot::text)), 0)::int as "maxBytes"
    from actor_snapshots where actor_id = any(${actorIds})`;
  const [deltasTable] = await sql<{ t: string | null }[]>`select to_regclass('actor_deltas')::text as t`;
  const [deltas] = deltasTable!.t
    ? await sql<{ rows: number; bytes: number }[]>`select count(*)::int as rows, coalesce(sum(octet_length(patch::text)), 0)::int as bytes from actor_deltas where actor_id = any(${actorIds})`
    : [{ rows: 0, bytes: 0 }];
  const [tables] = await sql<{ snapshots: string; deltas: string | null }[]>`
    select pg_total_relation_size('actor_snapshots')::text as snapshots, pg_total_relation_size(to_regclass('actor_deltas'))::text as deltas`;
  return { ...snap!, deltaRows: deltas!.rows, deltaBytes: deltas!.bytes, tableBytes: { snapshots: Number(tables!.snapshots), deltas: tables!.deltas === null ? null : Number(tables!.deltas) } };
}

function gitState(): { commit: string | null; dirty: string[] } {
  const rev = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: join(here, '..'), encoding: 'utf8' });
  const st = spawnSync('git', ['status', '--porcelain', '--', 'src', 'http', 'media', 'actors'], { cwd: join(here, '..'), encoding: 'utf8' });
  return { commit: rev.status === 0 ? rev.stdout.trim() : null, dirty: st.status === 0 ? st.stdout.split('\n').filter(Boolean) : [] };
}

const started = new Date();
const git = gitState();
say(
  `join storm: ${studentCount} students over ${seconds} s into ${roomCount} rooms (${waitingRooms} with a waiting room, ${audioRoomCount} with the teacher sending audio), media sample every ${sampleEvery || '-'}th student of those, flood ${opt.flood} (${floodRate}/s, reconnect ${opt['flood-reconnect']}), rounds ${rounds}, warmup ${warmupCount}; ` +
    `load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}; tree ${git.commit ?? '?'}${git.dirty.length ? ` + ${git.dirty.length} changed server files` : ''}`,
);

const nodes: RpcChild<NodeInfo>[] = [];
for (const name of ['a', 'b']) {
  const m = await startRpcChild<NodeInfo>(name, NODE, nodeEnv);
  nodes.push(m);
  cleanups.push(() => m.stop());
}
await waitSettled(nodes);
/** What the nodes log (warn and above), tallied by message, per storm; the first lines of each kind kept. */
const nodeLogs = nodes.map(() => ({ byMsg: {} as Record<string, number>, examples: [] as string[] }));
nodes.forEach((m, k) => {
  for (const stream of [m.proc.stdout!, m.proc.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (line.startsWith('BENCH_')) return;
      let msg = line.slice(0, 120);
      try {
        const j = JSON.parse(line) as { msg?: string; err?: { message?: string } };
        msg = `${j.msg ?? '?'}${j.err?.message ? `: ${j.err.message.replace(/\d+/g, 'N')}` : ''}`;
      } catch {
        // not JSON
      }
      const t = nodeLogs[k]!;
      if (!t.byMsg[msg]) t.examples.push(line.slice(0, 600));
      t.byMsg[msg] = (t.byMsg[msg] ?? 0) + 1;
    });
  }
});
const takeLogs = (): Record<string, { byMsg: Record<string, number>; examples: string[] }> => {
  const out = Object.fromEntries(nodes.map((m, k) => [m.name, nodeLogs[k]!]));
  nodeLogs.forEach((_, k) => (nodeLogs[k] = { byMsg: {}, examples: [] }));
  return out;
};
const urls = nodes.map((m) => m.info.url);
const nodeWorkers = nodes.map((m) => workerPids(m.info.pid));
say(`nodes: ${nodes.map((m, k) => `${m.name} ${m.info.url} (pid ${m.info.pid}, workers ${nodeWorkers[k]!.join(',') || 'none'})`).join('; ')}`);

const fx = await nodes[0]!.call<{ orgId: string; keys: string[]; teacherIds: string[]; classIds: string[]; studentIds: string[]; flooderId: string; ms: number }>('stormSetup', {
  students: Math.max(studentCount, warmupCount),
  rooms: roomCount,
  keys: keyCount,
});
say(`fixtures: ${fx.studentIds.length} students in ${fx.classIds.length} classes, ${fx.teacherIds.length} teachers, ${fx.keys.length} API keys (enterprise) in ${(fx.ms / 1000).toFixed(1)} s`);

const teachersProc = await startRpcChild<{ pid: number }>('teachers', TEACHERS, {});
cleanups.push(() => teachersProc.stop());
const mediaProc = await startRpcChild<{ pid: number }>('media students', join(here, 'servers/storm-media-students.ts'), {});
cleanups.push(() => mediaProc.stop());
const flooderProc = opt.flood === 'off' ? null : await startRpcChild<{ pid: number }>('flooder', FLOODER, {});
if (flooderProc) cleanups.push(() => flooderProc.stop());

const lb = new Nodes(urls, httpConnections);
cleanups.push(() => lb.close());
const BACKEND_IP = '198.51.100.7';

// ---- one storm --------------------------------------------------------------------------------------

interface PhaseResult {
  name: string;
  flood: boolean;
  students: number;
  seconds: number;
  startedAt: string;
  wallMs: number;
  loadAverageBefore: number[];
  steps: Record<string, { n: number; p50: number; p95: number; p99: number; max: number; errors: number }>;
  arrivalToJoined: { n: number; p50: number; p95: number; p99: number; max: number };
  errors: number;
  errorsByStep: Record<string, Record<string, number>>;
  errorSamples: string[];
  droppedInClass: Record<string, number>;
  leave: { closed: Record<string, number>; refused: Record<string, number>; ms: number; closeP50: number; closeP99: number; cpu: CpuUsage | null; db: DbDelta; serverLogs: Record<string, NodeLogs> };
  /** the 5 s before the first student */
  idle: { cpu: CpuUsage | null; db: DbDelta; seconds: number };
  db: DbDelta;
  /**
   * The persisted state of the storm's meeting actors at the end of the storm (everyone in): their snapshots,
   * their delta rows (none before 0017), and the size of both tables on disk then (every actor of the run).
   */
  meetingSnapshots: { n: number; avgBytes: number; maxBytes: number; deltaRows: number; deltaBytes: number; tableBytes: { snapshots: number; deltas: number | null } };
  lagMs: { p50: number; p99: number; max: number };
  eventLoopDelayMs: { p50: number; p99: number; max: number };
  mediaEventLoopDelayMs: { p50: number; p99: number; max: number };
  cpu: CpuUsage | null;
  teachers: unknown;
  flooder: unknown;
  /** what each node logged at warn and above during the storm (from the 5 s before the first student to the last answer), by message */
  serverLogs: Record<string, NodeLogs>;
  mediaBreakdownMs: Record<string, { p50: number; p99: number }>;
  timeline: { fromS: number; toS: number; students: number; errors: number; p99: Record<string, number> }[];
  /** raw per-student values per step, for the comparison (not written for the warmup) */
  samples: Partial<Record<Step, number[]>>;
}

let phaseSeq = 0;
async function storm(name: string, n: number, flood: boolean): Promise<PhaseResult> {
  const ipBlock = ++phaseSeq;
  const spanMs = (n * seconds * 1000) / studentCount;
  const intervalMs = spanMs / n;
  const loadAverageBefore = loadavg();
  say(`\n[${name}] ${n} students over ${(spanMs / 1000).toFixed(1)} s${flood ? `, one socket flooding ${floodRate} commands/s in a room of its own` : ''}; load average ${loadAverageBefore.map((l) => l.toFixed(2)).join(' ')}`);
  const mt = await nodes[0]!.call<{ rooms: { id: string; slug: string; waitingRoom: boolean }[]; flood: { id: string; slug: string } | null }>('stormMeetings', {
    orgId: fx.orgId,
    classIds: fx.classIds,
    teacherIds: fx.teacherIds,
    waiting: [...waitingRoomSet],
    flood,
    tag: `${name}-${ipBlock}`,
  });
  const entered = await teachersProc.call<{ teachers: number; ms: number }>('enter', { urls, key: fx.keys[0], rooms: mt.rooms, hostUserIds: fx.teacherIds, ipBlock, audio: [...audioRooms] });
  say(`[${name}] ${entered.teachers} teachers live, ${audioRooms.size} of them sending audio (${(entered.ms / 1000).toFixed(1)} s)`);
  await sleep(1000);
  if (flood) {
    await flooderProc!.call('start', { urls, key: fx.keys[fx.keys.length - 1], meetingId: mt.flood!.id, userId: fx.flooderId, rate: floodRate, reconnect: floodReconnect });
    await sleep(2000);
  }
  takeLogs();

  const held: { ws: WebSocket; peer: null }[] = [];
  const dropped: Record<string, number> = {};
  let leaving = false;
  const ctx: StudentContext = {
    lb,
    rooms: mt.rooms,
    keys: fx.keys,
    studentIds: fx.studentIds,
    ipBlock,
    stepTimeoutMs,
    backendIp: BACKEND_IP,
    hold(ws) {
      held.push({ ws, peer: null });
      ws.on('error', () => {});
      ws.once('close', (code) => {
        if (!leaving) bump(dropped, String(code));
      });
    },
  };
  const all = Array.from({ length: n }, (_, i) => i);
  const isMedia = (i: number) => inMediaSample(i, roomCount, audioRooms, sampleEvery);
  const mine = all.filter((i) => !isMedia(i));
  const theirs = all.filter(isMedia);

  const ELD_RESOLUTION_MS = 5;
  const eld = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  const pids: Record<string, number> = { 'node a': nodes[0]!.info.pid, 'node b': nodes[1]!.info.pid, teachers: teachersProc.info.pid, load: process.pid, 'media students': mediaProc.info.pid };
  nodeWorkers.forEach((ws, k) => ws.forEach((pid, w) => (pids[`worker ${'ab'[k]}${ws.length > 1 ? w : ''}`] = pid)));
  if (flood) pids.flooder = flooderProc!.info.pid;
  // a baseline: the same processes for 5 s before the first student (teachers in, the flood running if any)
  const idle0 = snapshot(pids);
  const idleDb0 = await dbCounters();
  await sleep(5000);
  const idleCpu = usage(idle0, snapshot(pids));
  const idleDb = await dbDelta(idleDb0, await dbCounters());
  const cpu0 = snapshot(pids);
  const db0 = await dbCounters();
  eld.enable();
  const t0Epoch = epochNow() + 200;
  const [mineDone, theirsDone] = await Promise.all([
    runSchedule(ctx, mine, t0Epoch, intervalMs, () => false),
    theirs.length
      ? mediaProc.call<{ records: StudentRecord[]; eventLoopDelayMs: { p50: number; p99: number; max: number } }>('run', {
          urls,
          connections: 8,
          rooms: mt.rooms,
          keys: fx.keys,
          studentIds: fx.studentIds,
          ipBlock,
          stepTimeoutMs,
          backendIp: BACKEND_IP,
          indices: theirs,
          t0Epoch,
          intervalMs,
        })
      : Promise.resolve({ records: [] as StudentRecord[], eventLoopDelayMs: { p50: NaN, p99: NaN, max: NaN } }),
  ]);
  const wallMs = epochNow() - t0Epoch;
  eld.disable();
  const cpu = usage(cpu0, snapshot(pids));
  const db = await dbDelta(db0, await dbCounters());
  const snap = await actorState(mt.rooms.map((x) => `meeting:${x.id}`));
  const records = [...mineDone, ...theirsDone.records].sort((x, y) => x.i - y.i);
  const flooder = flood ? await flooderProc!.call('stop') : null;
  await sleep(500);

  // everyone leaves (paced over --leave-seconds); then each teacher ends the class
  leaving = true;
  const tl = performance.now();
  const leaveCpu0 = snapshot(pids);
  const leaveDb0 = await dbCounters();
  const stormLogs = takeLogs();
  const [mainLeft, mediaLeft] = await Promise.all([
    leaveAll(held, leaveMsOption),
    mediaProc.call<{ closed: Record<string, number>; refused: Record<string, number>; ackMs: number[]; dropped: Record<string, number> }>('leave', { overMs: leaveMsOption }),
  ]);
  const closed = mainLeft.closed;
  const leaveRefused = mainLeft.refused;
  for (const [k, v] of Object.entries(mediaLeft.closed)) closed[k] = (closed[k] ?? 0) + v;
  for (const [k, v] of Object.entries(mediaLeft.refused)) leaveRefused[k] = (leaveRefused[k] ?? 0) + v;
  for (const [k, v] of Object.entries(mediaLeft.dropped)) dropped[k] = (dropped[k] ?? 0) + v;
  const leaveMs = performance.now() - tl;
  const leaveCpu = usage(leaveCpu0, snapshot(pids));
  const leaveDb = await dbDelta(leaveDb0, await dbCounters());
  const leaveAck = Float64Array.from([...mainLeft.ackMs, ...mediaLeft.ackMs]).sort();
  const leaveLogs = takeLogs();
  const ended = await teachersProc.call<{ ended: number; errors: Record<string, number> }>('end');
  const teachers = await teachersProc.call('stats');
  await sleep(3000);

  // what happened
  const steps: PhaseResult['steps'] = {};
  const samples: PhaseResult['samples'] = {};
  const errorsByStep: Record<string, Record<string, number>> = {};
  for (const rec of records) if (rec.error) (errorsByStep[rec.error.step] ??= {})[rec.error.code] = (errorsByStep[rec.error.step]?.[rec.error.code] ?? 0) + 1;
  for (const s of STEPS) {
    const v = records.map((r) => r.steps[s]).filter((x): x is number => x !== undefined);
    const sorted = Float64Array.from(v).sort();
    samples[s] = v;
    const errs = Object.values(errorsByStep[s] ?? {}).reduce((a, b) => a + b, 0);
    steps[s] = { n: v.length, p50: pct(sorted, 50), p95: pct(sorted, 95), p99: pct(sorted, 99), max: sorted.length ? sorted[sorted.length - 1]! : NaN, errors: errs };
  }
  const a2j = Float64Array.from(records.map((r) => r.arrivalToJoinedMs).filter((x): x is number => x !== undefined)).sort();
  const lag = Float64Array.from(records.map((r) => r.lagMs)).sort();
  const mediaBreakdownMs: PhaseResult['mediaBreakdownMs'] = {};
  for (const k of ['mediaJoin', 'transports', 'mediaReady', 'resumed', 'firstPacket']) {
    const v = Float64Array.from(records.map((r) => r.mediaTimes?.[k]).filter((x): x is number => x !== undefined)).sort();
    mediaBreakdownMs[k] = { p50: pct(v, 50), p99: pct(v, 99) };
  }
  const errors = records.filter((r) => r.error).length;
  // p99 of every step by sixth of the storm (by arrival): a queue that grows shows here
  const timeline = Array.from({ length: 6 }, (_, w) => {
    const rs = records.filter((r) => Math.floor((r.i * 6) / n) === w);
    const p99 = (v: (number | undefined)[]) => pct(Float64Array.from(v.filter((x): x is number => x !== undefined)).sort(), 99);
    return { fromS: (w * spanMs) / 6000, toS: ((w + 1) * spanMs) / 6000, students: rs.length, errors: rs.filter((r) => r.error).length, p99: Object.fromEntries(STEPS.map((st) => [st, p99(rs.map((r) => r.steps[st]))])) };
  });
  const result: PhaseResult = {
    name,
    flood,
    students: n,
    seconds: spanMs / 1000,
    startedAt: new Date(Date.now() - wallMs).toISOString(),
    wallMs,
    loadAverageBefore,
    steps,
    arrivalToJoined: { n: a2j.length, p50: pct(a2j, 50), p95: pct(a2j, 95), p99: pct(a2j, 99), max: a2j.length ? a2j[a2j.length - 1]! : NaN },
    errors,
    errorsByStep,
    errorSamples: records.filter((r) => r.error).slice(0, 20).map((r) => `student ${r.i} (room ${r.room}): ${r.error!.message}`),
    droppedInClass: dropped,
    leave: { closed, refused: leaveRefused, ms: leaveMs, closeP50: pct(leaveAck, 50), closeP99: pct(leaveAck, 99), cpu: leaveCpu, db: leaveDb, serverLogs: leaveLogs },
    idle: { cpu: idleCpu, db: idleDb, seconds: 5 },
    db,
    meetingSnapshots: snap,
    lagMs: { p50: pct(lag, 50), p99: pct(lag, 99), max: lag.length ? lag[lag.length - 1]! : NaN },
    // the histogram records each timer's whole interval: what is beyond the resolution is the delay
    eventLoopDelayMs: { p50: Math.max(0, eld.percentile(50) / 1e6 - ELD_RESOLUTION_MS), p99: Math.max(0, eld.percentile(99) / 1e6 - ELD_RESOLUTION_MS), max: Math.max(0, eld.max / 1e6 - ELD_RESOLUTION_MS) },
    mediaEventLoopDelayMs: theirsDone.eventLoopDelayMs,
    cpu,
    teachers: { ...(teachers as object), ended },
    flooder,
    serverLogs: stormLogs,
    mediaBreakdownMs,
    timeline,
    samples,
  };
  reportPhase(result);
  return result;
}

function reportPhase(r: PhaseResult): void {
  const noise = r.cpu?.other ?? 0;
  say(
    `[${r.name}] ${r.students} students in ${(r.wallMs / 1000).toFixed(1)} s; errors ${r.errors}${r.errors ? ` ${JSON.stringify(r.errorsByStep)}` : ''}; other processes ${noise.toFixed(2)} cores${noise > NOISY_CORES ? ' (~) noisy' : ''}`,
  );
  say('| step | students | p50 | p95 | p99 | max | errors |');
  say('|---|---:|---:|---:|---:|---:|---:|');
  for (const s of STEPS) {
    const x = r.steps[s]!;
    if (!x.n && !x.errors) continue;
    say(`| ${s} | ${x.n} | ${fmtMs(x.p50)} | ${fmtMs(x.p95)} | ${fmtMs(x.p99)} | ${fmtMs(x.max)} | ${x.errors} |`);
  }
  const a = r.arrivalToJoined;
  say(`| arrival to joined | ${a.n} | ${fmtMs(a.p50)} | ${fmtMs(a.p95)} | ${fmtMs(a.p99)} | ${fmtMs(a.max)} | ${r.errors} |`);
  say(`[${r.name}] p99 by sixth of the storm: ${r.timeline.map((w) => `${Math.round(w.fromS)}-${Math.round(w.toS)} s exchange ${fmtMs(w.p99.exchange!)} ws join ${fmtMs(w.p99['ws join']!)}${w.errors ? ` (${w.errors} errors)` : ''}`).join('; ')}`);
  const mb = r.mediaBreakdownMs;
  if (mb.firstPacket && !Number.isNaN(mb.firstPacket.p50)) {
    say(`[${r.name}] media after joined, p50 (p99): media-join ${fmtMs(mb.mediaJoin!.p50)} (${fmtMs(mb.mediaJoin!.p99)}), transports ${fmtMs(mb.transports!.p50)} (${fmtMs(mb.transports!.p99)}), media-ready ${fmtMs(mb.mediaReady!.p50)} (${fmtMs(mb.mediaReady!.p99)}), consumer resumed ${fmtMs(mb.resumed!.p50)} (${fmtMs(mb.resumed!.p99)}), first RTP ${fmtMs(mb.firstPacket.p50)} (${fmtMs(mb.firstPacket.p99)})`);
  }
  const g = r.cpu?.groups ?? {};
  const c = (k: string) => (g[k] ?? 0).toFixed(2);
  const workers = Object.keys(g).filter((k) => k.startsWith('worker'));
  say(
    `[${r.name}] CPU (cores): node a ${c('node a')}, node b ${c('node b')}, ${workers.map((k) => `${k} ${c(k)}`).join(', ')}, postgres ${c('postgres')}, redis ${c('redis')}, load generator ${c('load')}, media students ${c('media students')}, teachers ${c('teachers')}${r.flood ? `, flooder ${c('flooder')}` : ''}, other (noise) ${(r.cpu?.other ?? NaN).toFixed(2)}; busy ${(r.cpu?.cores.reduce((x, y) => x + y, 0) ?? NaN).toFixed(2)} of ${r.cpu?.cores.length ?? '?'}`,
  );
  const ig = r.idle.cpu?.groups ?? {};
  const nodes2 = (x: Record<string, number>) => (x['node a'] ?? 0) + (x['node b'] ?? 0);
  const perStudent = (cores: number) => (cores * r.wallMs) / r.students;
  say(
    `[${r.name}] server cost per student: nodes ${fmtMs(perStudent(nodes2(g)))} of CPU (${fmtMs(perStudent(nodes2(g) - nodes2(ig)))} over the 5 s before the storm, which ran at ${nodes2(ig).toFixed(2)} cores), postgres ${fmtMs(perStudent((g.postgres ?? 0) - (ig.postgres ?? 0)))}; ` +
      `${(r.db.commits / r.students).toFixed(1)} commits and ${Math.round(r.db.walBytes / r.students / 1024)} KiB of WAL per student (${r.db.rollbacks} rollbacks; before the storm ${(r.idle.db.commits / r.idle.seconds).toFixed(0)} commits/s); meeting snapshots at the end ${Math.round(r.meetingSnapshots.avgBytes / 1024)} KiB on average`,
  );
  const w = r.db.walByTable;
  const ms = r.meetingSnapshots;
  const perJoin = (b: number) => `${Math.round(b / r.students).toLocaleString('en')} B`;
  say(
    `[${r.name}] WAL per join: ${perJoin(r.db.walBytes)} (the server's)${w ? `; the run's database ${perJoin(w.database)}, of which the actors' state ${perJoin(w.snapshots + w.deltas)} (snapshots ${perJoin(w.snapshots)}, deltas ${perJoin(w.deltas)})` : ''}; ` +
      `the storm's ${ms.n} meeting actors at the end: snapshots ${Math.round(ms.avgBytes / 1024)} KiB on average (max ${Math.round(ms.maxBytes / 1024)}), ${ms.deltaRows} delta rows of ${Math.round(ms.deltaBytes / 1024)} KiB; tables on disk: actor_snapshots ${(ms.tableBytes.snapshots / 1048576).toFixed(1)} MiB${ms.tableBytes.deltas === null ? '' : `, actor_deltas ${(ms.tableBytes.deltas / 1048576).toFixed(1)} MiB`}`,
  );
  say(
    `[${r.name}] load generator: start lag p99 ${fmtMs(r.lagMs.p99)} (max ${fmtMs(r.lagMs.max)}), event-loop delay p99 ${fmtMs(r.eventLoopDelayMs.p99)} (max ${fmtMs(r.eventLoopDelayMs.max)}); media students' process: event-loop delay p99 ${fmtMs(r.mediaEventLoopDelayMs.p99)} (max ${fmtMs(r.mediaEventLoopDelayMs.max)})`,
  );
  if (Object.keys(r.droppedInClass).length) say(`[${r.name}] sockets closed while in class: ${JSON.stringify(r.droppedInClass)}`);
  const lg = r.leave.cpu?.groups ?? {};
  const countLogs = (l: Record<string, NodeLogs>) => Object.values(l).reduce((x, m) => x + Object.values(m.byMsg).reduce((a, b) => a + b, 0), 0);
  const leaveLogs = countLogs(r.leave.serverLogs);
  say(
    `[${r.name}] leave: closed ${JSON.stringify(r.leave.closed)}${Object.keys(r.leave.refused).length ? `, refused ${JSON.stringify(r.leave.refused)}` : ''} in ${(r.leave.ms / 1000).toFixed(1)} s (from leave to close p50 ${fmtMs(r.leave.closeP50)}, p99 ${fmtMs(r.leave.closeP99)}; nodes ${((lg['node a'] ?? 0) + (lg['node b'] ?? 0)).toFixed(2)} cores, postgres ${(lg.postgres ?? 0).toFixed(2)}, ${(r.leave.db.commits / r.students).toFixed(1)} commits and ${Math.round(r.leave.db.walBytes / r.students / 1024)} KiB of WAL per leave${leaveLogs ? `; ${leaveLogs} server log lines` : ''}); teachers: ${JSON.stringify(r.teachers)}`,
  );
  if (r.flooder) {
    const f = r.flooder as { sent: number; ok: number; refused: Record<string, number>; closes: Record<string, number>; reconnects: number; reconnectFailures: Record<string, number>; floodMs: number; skipped: number };
    const s = f.floodMs / 1000;
    say(
      `[${r.name}] the flood alone (the 5 s before the first student): nodes ${nodes2(ig).toFixed(2)} cores, postgres ${(ig.postgres ?? 0).toFixed(2)}, ${(r.idle.db.commits / r.idle.seconds).toFixed(0)} commits/s`,
    );
    say(
      `[${r.name}] flooder: ${f.sent} commands in ${s.toFixed(1)} s (${Math.round(f.sent / s)}/s; ${f.skipped} not sent while reconnecting), ${f.ok} accepted (${(f.ok / s).toFixed(1)}/s reached the actor), refused ${JSON.stringify(f.refused)}, closes ${JSON.stringify(f.closes)}, ${f.reconnects} reconnects${Object.keys(f.reconnectFailures).length ? ` (failed ${JSON.stringify(f.reconnectFailures)})` : ''}`,
    );
  }
  for (const [m, l] of Object.entries(r.serverLogs)) {
    if (Object.keys(l.byMsg).length) say(`[${r.name}] node ${m} logged (warn and above): ${Object.entries(l.byMsg).map(([k, v]) => `${v} × ${k}`).join('; ')}`);
  }
  for (const [m, l] of Object.entries(r.leave.serverLogs)) {
    if (Object.keys(l.byMsg).length) say(`[${r.name}] node ${m} logged while they left: ${Object.entries(l.byMsg).map(([k, v]) => `${v} × ${k}`).join('; ')}`);
  }
  for (const e of r.errorSamples.slice(0, 5)) say(`[${r.name}] error: ${e}`);
}

// ---- comparison: the other rooms' p99 without and with the flood --------------------------------------

/** 95% bootstrap interval of p99(b) - p99(a). */
function bootstrapP99Diff(a: number[], b: number[], iters = 1000): [number, number] {
  const ra = new Float64Array(a.length);
  const rb = new Float64Array(b.length);
  const diffs = new Float64Array(iters);
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296);
  for (let k = 0; k < iters; k++) {
    for (let j = 0; j < a.length; j++) ra[j] = a[Math.floor(rnd() * a.length)]!;
    for (let j = 0; j < b.length; j++) rb[j] = b[Math.floor(rnd() * b.length)]!;
    ra.sort();
    rb.sort();
    diffs[k] = pct(rb, 99) - pct(ra, 99);
  }
  diffs.sort();
  return [pct(diffs, 2.5), pct(diffs, 97.5)];
}

// ---- the run ----------------------------------------------------------------------------------------

const phases: PhaseResult[] = [];
let warm: PhaseResult | null = null;
try {
  if (warmupCount > 0) {
    warm = await storm('warmup', warmupCount, false);
  }
  const order: boolean[] = [];
  if (opt.flood === 'both') for (let r = 0; r < rounds; r++) order.push(...(r % 2 ? [true, false] : [false, true]));
  else for (let r = 0; r < rounds; r++) order.push(opt.flood === 'on');
  for (const [k, f] of order.entries()) phases.push(await storm(`${f ? 'flood' : 'no flood'}${rounds > 1 ? ` ${Math.floor(k / (opt.flood === 'both' ? 2 : 1)) + 1}` : ''}`, studentCount, f));

  // summary
  const off = phases.filter((p) => !p.flood);
  const on = phases.filter((p) => p.flood);
  const pooled = (ps: PhaseResult[], s: Step) => ps.flatMap((p) => p.samples[s] ?? []);
  const totalErrors = phases.reduce((a, p) => a + p.errors, 0);
  const summary: Record<string, unknown> = {};
  say('\nsummary (every recorded storm; p99 target under 1 s per step, zero errors):');
  const worst: Record<string, number> = {};
  for (const s of STEPS) {
    const all = phases.map((p) => p.steps[s]!);
    if (!all.some((x) => x.n)) continue;
    worst[s] = Math.max(...all.map((x) => x.p99).filter((v) => !Number.isNaN(v)));
  }
  const targetMet = totalErrors === 0 && Object.values(worst).every((v) => v < 1000);
  say(`target: ${targetMet ? 'met' : 'NOT met'} (worst p99 per step: ${Object.entries(worst).map(([k, v]) => `${k} ${fmtMs(v)}`).join(', ')}; errors ${totalErrors})`);
  summary.target = { met: targetMet, worstP99Ms: worst, errors: totalErrors };
  if (off.length && on.length) {
    say(`\nthe other rooms without and with the flooding socket (p99 of the ${off.length} storm${off.length > 1 ? 's' : ''} without and the ${on.length} with, pooled; 95% bootstrap interval of the difference${off.length > 1 ? '; spread: how far apart the p99 of the storms without flood were' : ''}):`);
    say(`| step | p99 without | p99 with | difference | 95% interval |${off.length > 1 ? ' spread without |' : ''} within noise |`);
    say(`|---|---:|---:|---:|---:|${off.length > 1 ? '---:|' : ''}---|`);
    const rows: Record<string, unknown>[] = [];
    for (const s of STEPS) {
      const a = pooled(off, s);
      const b = pooled(on, s);
      if (!a.length || !b.length) continue;
      const pa = pct(Float64Array.from(a).sort(), 99);
      const pb = pct(Float64Array.from(b).sort(), 99);
      const [lo, hi] = bootstrapP99Diff(a, b);
      const offP99 = off.map((p) => p.steps[s]!.p99);
      const spreadOff = off.length > 1 ? Math.max(...offP99) - Math.min(...offP99) : null;
      // within noise: the interval of the difference holds zero, or the difference is no larger than two storms without flood differ
      const within = (lo <= 0 && hi >= 0) || (spreadOff !== null && Math.abs(pb - pa) <= spreadOff);
      rows.push({ step: s, p99Without: pa, p99With: pb, diff: pb - pa, ci95: [lo, hi], p99PerStormWithout: offP99, p99PerStormWith: on.map((p) => p.steps[s]!.p99), spreadWithout: spreadOff, withinNoise: within });
      say(`| ${s} | ${fmtMs(pa)} | ${fmtMs(pb)} | ${pb - pa >= 0 ? '+' : ''}${fmtMs(pb - pa)} | ${fmtMs(lo)} to ${fmtMs(hi)} |${spreadOff !== null ? ` ${fmtMs(spreadOff)} |` : ''} ${within ? 'yes' : 'no'} |`);
    }
    say(`other processes meanwhile (cores): ${phases.map((p) => `${p.name} ${(p.cpu?.other ?? NaN).toFixed(2)}`).join(', ')}`);
    summary.flood = rows;
  }
  const out = opt.out ?? join(here, 'results', `storm-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  const strip = (p: PhaseResult) => ({ ...p, samples: undefined });
  const doc = {
    scenario: 'storm',
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, loadAverageAtStart: loadavg(), tree: git },
    options: { students: studentCount, seconds, rooms: roomCount, waitingRooms, waitingRoomIndexes: [...waitingRoomSet], audioRooms: [...audioRooms], mediaSample: sampleEvery, leaveSeconds: leaveMsOption / 1000, flood: opt.flood, floodRate, floodReconnect, rounds, warmup: warmupCount, keys: keyCount, connections: httpConnections, mediaWorkers, stepTimeoutMs },
    steps: STEP_WHAT,
    summary,
    warmup: warm ? strip(warm) : null,
    phases: phases.map(strip),
    samples: Object.fromEntries(phases.map((p) => [p.name, p.samples])),
    report: lines,
  };
  writeFileSync(out, JSON.stringify(doc, null, 1) + '\n');
  say(`\nresults: ${out}`);
  if (asJson) process.stdout.write(JSON.stringify({ ...doc, samples: undefined }) + '\n');
  if (totalErrors) process.exitCode = 1;
} catch (err) {
  console.error((err as Error).stack ?? err);
  for (const m of nodes) {
    const l = m.otherLines().slice(-10);
    if (l.length) console.error(`node ${m.name}, last lines:\n${l.join('\n')}`);
  }
  process.exitCode = 1;
} finally {
  await cleanup();
}
