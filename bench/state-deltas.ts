/**
 * What a meeting actor's transition costs to persist, whole snapshot against delta, without a database:
 * `node --import tsx bench/state-deltas.ts [--people 60,500] [--compare DIR]`.
 *
 * Drives the real meeting machine (actors/meeting) through a class filling up to each size, then a hand
 * raised by everyone, an anonymous poll everyone answers, questions and upvotes, and half the room
 * leaving; for every transition it measures the persisted snapshot's JSON (what the runtime wrote before
 * 0017) and the JSON Patch the runtime writes now (src/platform/runtime/json-patch.ts: the context frozen,
 * diffed against the previous snapshot, frozen objects that did not change skipped), and checks that the
 * patch applied to the previous snapshot's JSON gives the new one's. It also times the same diff without
 * the shortcut (both sides through JSON, walked whole), and with `--compare DIR` (a folder whose
 * node_modules holds fast-json-patch and rfc6902, e.g. `npm install --prefix DIR fast-json-patch rfc6902`)
 * their diff on the same pairs, given JSON on both sides as that one is.
 * See bench/README.md, "The meeting's state: deltas instead of whole snapshots".
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createActor } from 'xstate';
import { meetingMachine } from '../actors/meeting/meeting.machine.ts';
import { meetingEvent, meetingInput } from '../actors/meeting/meeting.schemas.ts';
import { applyPatch, deepFreeze, diff, jsonEqual, type Json } from '../src/platform/runtime/json-patch.ts';
import postgres from 'postgres';
import { pgOptions, type Sql } from '../src/platform/db/index.ts';
import { migrate } from '../src/platform/db/migrate.ts';
import { writeState, type StateWrite } from '../src/platform/runtime/actor-state.ts';
import { benchArgs } from './lib/args.ts';
import { cleanup, cleanups } from './lib/cleanup.ts';
import { scratchBackends } from './lib/scratch.ts';

const USAGE = `node --import tsx bench/state-deltas.ts [options]

  --people LIST   class sizes, comma-separated                                  [60,500]
  --compare DIR   also time fast-json-patch's compare and rfc6902's createPatch, from DIR/node_modules
  --repeat N      time each diff N times (the median is kept)                   [5]
  --database      also write the joins' snapshots and deltas to a scratch database (the runtime's SQL,
                  src/platform/runtime/actor-state.ts) under several compaction rules, and read the WAL
                  each wrote (pg_walinspect, this database's actor tables only)`;

const { opt, int } = benchArgs(USAGE, { people: { type: 'string', default: '60,500' }, compare: { type: 'string' }, repeat: { type: 'string', default: '5' }, database: { type: 'boolean', default: false } });
const sizes = opt.people.split(',').map((s) => int('people', s, 1));
const repeat = int('repeat', opt.repeat, 1);

type Differ = (a: Json, b: Json) => unknown;
const others: Record<string, { diff: Differ }> = {};
if (opt.compare) {
  const from = (p: string) => import(pathToFileURL(join(opt.compare!, 'node_modules', p)).href);
  const fjp = await from('fast-json-patch/index.mjs');
  const rfc = await from('rfc6902/index.js');
  others['fast-json-patch compare'] = { diff: (a, b) => fjp.compare(a, b) };
  others['rfc6902 createPatch'] = { diff: (a, b) => rfc.createPatch(a, b) };
}

const T0 = Date.parse('2026-11-26T09:00:00Z');
const input = meetingInput.parse({
  meetingId: 'mtg_bench0000000000000',
  orgId: 'org_bench0000000000000',
  externalMeetingId: 'ext-bench',
  kind: 'CLASS',
  title: 'Algebra',
  type: 'CLASSROOM',
  slug: 'abc-defg-hjk',
  hostUserId: 'usr_teacher00000000000',
  classId: 'cls_bench0000000000000',
  externalClassId: 'ext-class',
  courseId: null,
  batchId: null,
  scheduledStart: new Date(T0).toISOString(),
  scheduledEnd: new Date(T0 + 3_600_000).toISOString(),
  settings: { muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, recordAutomatically: false, waitingRoom: false },
  planMaxMinutes: 720,
  status: 'SCHEDULED',
  maxParticipants: null,
  planMaxParticipants: 1000,
});

const pad = (s: string | number) => String(s).padStart(16, '0');
const median = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)]!;

interface Row {
  phase: string;
  transitions: number;
  snapshotBytes: number;
  patchBytes: number;
  /** before 0017: JSON.stringify of the whole snapshot */
  stringifyUs: number;
  /** the runtime now: the context frozen, diffed against the previous snapshot (unchanged frozen objects skipped), the patch stringified */
  ownUs: number;
  /** the same diff without the shortcut: both sides through JSON first, walked whole */
  plainUs: number;
  otherUs: Record<string, number>;
}

/** The join phase's transitions as the runtime would write them: the whole snapshot, and the patch. */
interface Written {
  snapshot: string;
  patch: string;
}

function run(people: number, joins: Written[] = []): Row[] {
  const actor = createActor(meetingMachine, { input });
  actor.start();
  let at = T0;
  let previous: unknown = actor.getPersistedSnapshot();
  deepFreeze((previous as unknown as { context: unknown }).context);
  let persisted = JSON.parse(JSON.stringify(previous)) as Json;
  const rows: Row[] = [];
  let row: Row | null = null;
  const phase = (name: string) => {
    row = { phase: name, transitions: 0, snapshotBytes: 0, patchBytes: 0, stringifyUs: 0, ownUs: 0, plainUs: 0, otherUs: {} };
    rows.push(row);
  };
  const time = (fn: () => void): number => {
    const ts: number[] = [];
    for (let k = 0; k < repeat; k++) {
      const t = performance.now();
      fn();
      ts.push((performance.now() - t) * 1000);
    }
    return median(ts);
  };
  const send = (event: Record<string, unknown>) => {
    at += 50;
    actor.send(meetingEvent.parse({ ...event, at }) as never);
    const live = actor.getPersistedSnapshot();
    let text = '';
    const stringifyUs = time(() => (text = JSON.stringify(live)));
    let patchText = '';
    const ownUs = time(() => {
      deepFreeze((live as unknown as { context: unknown }).context);
      patchText = JSON.stringify(diff(previous, live));
    });
    const plainUs = time(() => diff(persisted, JSON.parse(JSON.stringify(live)) as Json));
    const next = JSON.parse(text) as Json;
    const check = applyPatch(JSON.parse(JSON.stringify(persisted)) as Json, JSON.parse(patchText));
    if (!jsonEqual(check, next)) throw new Error(`the patch of ${String(event.type)} does not give the snapshot`);
    for (const [name, o] of Object.entries(others)) row!.otherUs[name] = (row!.otherUs[name] ?? 0) + time(() => o.diff(persisted, JSON.parse(JSON.stringify(live)) as Json));
    if (row!.phase.startsWith('join')) joins.push({ snapshot: text, patch: patchText });
    row!.transitions++;
    row!.snapshotBytes += Buffer.byteLength(text);
    row!.patchBytes += Buffer.byteLength(patchText);
    row!.stringifyUs += stringifyUs;
    row!.ownUs += ownUs;
    row!.plainUs += plainUs;
    persisted = next;
    previous = live;
  };
  const student = (i: number) => ({
    participantId: `par_${pad(i)}`,
    sessionId: `ses_${pad(i)}`,
    user: { id: `usr_${pad(i)}`, externalId: `storm-student-${i}`, name: `Student ${i}`, email: null, role: 'STUDENT' },
    roomRole: 'PARTICIPANT',
    device: 'web',
    connectionId: `con_${pad(i)}`,
    voter: `voter-${pad(i)}`,
  });
  phase('INIT and the teacher');
  send({ type: 'INIT' });
  send({ type: 'JOIN', participantId: 'par_teacher', sessionId: 'ses_teacher', user: { id: input.hostUserId, externalId: 't-1', name: 'Tina Teacher', email: 'tina@school.example', role: 'TEACHER' }, roomRole: 'HOST', device: 'web', connectionId: 'con_teacher' });
  phase(`join (1 to ${people})`);
  for (let i = 0; i < people; i++) send({ type: 'JOIN', ...student(i) });
  phase('raise hand (everyone)');
  for (let i = 0; i < people; i++) send({ type: 'HAND', participantId: `par_${pad(i)}`, by: `par_${pad(i)}`, raise: true });
  phase('anonymous poll: open, everyone answers');
  send({ type: 'OPEN_POLL', pollId: 'pol_bench', by: 'par_teacher', question: 'Which one?', pollType: 'SINGLE_CHOICE', anonymous: true, options: ['a', 'b', 'c', 'd'], correct: [] });
  for (let i = 0; i < people; i++) send({ type: 'ANSWER_POLL', pollId: 'pol_bench', participantId: `par_${pad(i)}`, voter: `voter-${pad(i)}`, choices: [i % 4], text: null });
  phase('questions (a tenth ask, everyone upvotes the first)');
  for (let i = 0; i < people; i += 10) send({ type: 'ASK_QUESTION', questionId: `qst_${pad(i)}`, participantId: `par_${pad(i)}`, voter: `voter-${pad(i)}`, text: `Question ${i}: could you say more about this?`, anonymous: false });
  for (let i = 1; i < people; i++) send({ type: 'UPVOTE_QUESTION', questionId: `qst_${pad(0)}`, participantId: `par_${pad(i)}`, voter: `voter-${pad(i)}` });
  phase('half leave');
  for (let i = 0; i < people; i += 2) send({ type: 'LEAVE', participantId: `par_${pad(i)}` });
  actor.stop();
  return rows;
}

const kib = (b: number) => (b >= 10_240 ? `${Math.round(b / 1024)} KiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${Math.round(b)} B`);
const us = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${Math.round(v)} µs`);

/** A compaction rule: after how many deltas, and whether sooner when they add up to the snapshot's bytes; null: the whole snapshot every time (before 0017). */
type Rule = { every: number; bytes: boolean } | null;
const RULES: [string, Rule][] = [
  ['whole snapshot each transition (before)', null],
  ['deltas, compacted every 25', { every: 25, bytes: false }],
  ['every 50', { every: 50, bytes: false }],
  ['every 100', { every: 100, bytes: false }],
  ['every 200', { every: 200, bytes: false }],
  ['every 50, sooner at the snapshot\'s bytes (the runtime)', { every: 50, bytes: true }],
  ['at the snapshot\'s bytes, at most 1,000', { every: 1000, bytes: true }],
];

/** Writes `joins` as the rule says, one transaction each, and reads the WAL the actor tables got. */
async function writeJoins(sql: Sql, actorId: string, joins: Written[], rule: Rule): Promise<{ walBytes: number; ms: number; snapshots: number; maxDeltas: number }> {
  const lsn = async () => (await sql<{ l: string }[]>`select pg_current_wal_flush_lsn()::text as l`)[0]!.l;
  const from = await lsn();
  const t = performance.now();
  let snapshotSeq = 0;
  let snapshotBytes = 0;
  let deltaBytes = 0;
  let snapshots = 0;
  let maxDeltas = 0;
  for (const [k, j] of joins.entries()) {
    const seq = k + 1;
    const pending = seq - 1 - snapshotSeq;
    const whole = k === 0 || rule === null || pending + 1 >= rule.every || (rule.bytes && deltaBytes + j.patch.length >= snapshotBytes);
    const w: StateWrite = whole ? { kind: 'snapshot', seq, text: j.snapshot, next: null } : { kind: 'delta', seq, text: j.patch, next: null };
    await sql.begin((tx) => writeState(tx, { actorId, kind: 'meeting', shard: 0, version: 1 }, w, T0));
    if (whole) {
      snapshotSeq = seq;
      snapshotBytes = j.snapshot.length;
      deltaBytes = 0;
      snapshots++;
    } else {
      deltaBytes += j.patch.length;
      maxDeltas = Math.max(maxDeltas, seq - snapshotSeq);
    }
  }
  const ms = performance.now() - t;
  const to = await lsn();
  const [r] = await sql<{ bytes: string }[]>`
    with heaps as (
      select oid, reltoastrelid from pg_class where relname in ('actor_snapshots', 'actor_deltas') and relkind = 'r'
    ), tabs as (
      select oid from heaps union all select reltoastrelid from heaps where reltoastrelid <> 0
    ), rels as (
      select pg_relation_filenode(oid)::text as node from tabs
      union all select pg_relation_filenode(x.indexrelid)::text from tabs t join pg_index x on x.indrelid = t.oid
    )
    select coalesce(sum(record_length), 0)::text as bytes
    from pg_get_wal_records_info(${from}::pg_lsn, ${to}::pg_lsn)
    where (regexp_match(block_ref, 'rel [0-9]+/[0-9]+/([0-9]+)'))[1] in (select node from rels)
      and (regexp_match(block_ref, 'rel [0-9]+/([0-9]+)/'))[1] = (select oid::text from pg_database where datname = current_database())`;
  return { walBytes: Number(r!.bytes), ms, snapshots, maxDeltas };
}

let sql: Sql | null = null;
if (opt.database) {
  const { dbUrl } = await scratchBackends(cleanups);
  sql = postgres(dbUrl.toString(), { ...pgOptions, max: 1, onnotice: () => {} }) as unknown as Sql;
  cleanups.push(async () => void (await sql!.end({ timeout: 1 })));
  await migrate(sql);
  await sql`create extension if not exists pg_walinspect`;
}
try {
  console.log(`node ${process.version}; each diff timed ${repeat} times, the median kept; per transition, averages over the phase\n`);
  for (const people of sizes) {
    const joins: Written[] = [];
    const rows = run(people, joins);
    const names = Object.keys(others);
    console.log(`### ${people} people\n`);
    console.log(`| phase | transitions | snapshot | patch | JSON.stringify of the snapshot (before) | diff, frozen objects skipped (now) | diff through JSON, whole |${names.map((n) => ` ${n} |`).join('')}`);
    console.log(`|---|---:|---:|---:|---:|---:|---:|${names.map(() => '---:|').join('')}`);
    for (const r of rows) {
      const n = r.transitions;
      console.log(`| ${r.phase} | ${n} | ${kib(r.snapshotBytes / n)} | ${kib(r.patchBytes / n)} | ${us(r.stringifyUs / n)} | ${us(r.ownUs / n)} | ${us(r.plainUs / n)} |${names.map((k) => ` ${us(r.otherUs[k]! / n)} |`).join('')}`);
    }
    console.log('');
    if (sql) {
      console.log(`the ${joins.length} joins written to Postgres (one transaction each, the runtime's SQL), WAL of the actor tables:\n`);
      console.log('| rule | WAL per join | whole snapshots written | most deltas a load replays | write time per join |');
      console.log('|---|---:|---:|---:|---:|');
      for (const [k, [name, rule]] of RULES.entries()) {
        const r = await writeJoins(sql, `meeting:bench-${people}-${k}`, joins, rule);
        console.log(`| ${name} | ${kib(r.walBytes / joins.length)} | ${r.snapshots} | ${r.maxDeltas} | ${us((r.ms * 1000) / joins.length)} |`);
      }
      console.log('');
    }
  }
} finally {
  await cleanup();
}
