/**
 * The benchmark runner: `npm run bench -- [--scenario join] [--duration 8] [--connections 64] ...`.
 *
 * Every figure is a ratio to a bare uWebSockets.js server measured in the same run: servers run in
 * their own processes pinned to core 0, wrk runs pinned to core 1, and with --rounds N the scenarios
 * are interleaved with the baselines so that drift on a shared machine hits both. See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './lib/args.ts';
import { ABLATION_NAMES, ALL_AT_ONCE, type Ablation } from './lib/ablations.ts';
import { startServer, type ServerChild } from './lib/child.ts';
import { snapshot, usage, type CpuSnapshot } from './lib/cpu.ts';
import { fmtInt, ms, pct, printTable, ratiosPerRound, summarize, type Run } from './lib/report.ts';
import { createPgbenchTable, pgbenchVersion, runPgbench } from './lib/pgbench.ts';
import { hasTaskset, runWrk, wrkVersion, type WrkResult } from './lib/wrk.ts';
import { PLANS } from '../src/core/plans.ts';
import { REDIS_URL, scratchBackends } from './lib/scratch.ts';
import { cleanup, cleanups } from './lib/cleanup.ts';

// `--scenario cluster` is its own runner (several nodes, no wrk): bench/cluster.ts
const argv = process.argv.slice(2);
if (argv.includes('--scenario=cluster') || argv.some((a, i) => a === '--scenario' && argv[i + 1] === 'cluster')) {
  await import('./cluster.ts');
  process.exit(process.exitCode ?? 0);
}
// `--scenario webhooks` too (a receiver, a client, a node; no wrk): bench/webhooks.ts
if (argv.includes('--scenario=webhooks') || argv.some((a, i) => a === '--scenario' && argv[i + 1] === 'webhooks')) {
  await import('./webhooks.ts');
  process.exit(process.exitCode ?? 0);
}
// `--scenario media` too (mediasoup workers, an RTP generator and sink; no wrk): bench/media.ts
if (argv.includes('--scenario=media') || argv.some((a, i) => a === '--scenario' && argv[i + 1] === 'media')) {
  await import('./media.ts');
  process.exit(process.exitCode ?? 0);
}
// `--scenario class` too (one worker, a teacher and N students through RoomMedia; no wrk): bench/class.ts
if (argv.includes('--scenario=class') || argv.some((a, i) => a === '--scenario' && argv[i + 1] === 'class')) {
  await import('./class.ts');
  process.exit(process.exitCode ?? 0);
}
// `--scenario storm` too (two nodes, teachers, students over HTTP and WebSockets; no wrk): bench/storm.ts
if (argv.includes('--scenario=storm') || argv.some((a, i) => a === '--scenario' && argv[i + 1] === 'storm')) {
  await import('./storm.ts');
  process.exit(process.exitCode ?? 0);
}
// `--scenario recording` too (ffmpeg composing a synthesized class; no wrk): bench/recording.ts
if (argv.includes('--scenario=recording') || argv.some((a, i) => a === '--scenario' && argv[i + 1] === 'recording')) {
  await import('./recording.ts');
  process.exit(process.exitCode ?? 0);
}
// `--scenario notes` too (the offline transcription and notes engines; no wrk): bench/notes.ts
if (argv.includes('--scenario=notes') || argv.some((a, i) => a === '--scenario' && argv[i + 1] === 'notes')) {
  await import('./notes.ts');
  process.exit(process.exitCode ?? 0);
}

const USAGE = `npm run bench -- [options]

  --scenario S      join (mint and exchange), mint or exchange          [join]
                    (exchange runs beside pgbench's single-row insert at the same
                    concurrency, into the run's database: its database baseline)
                    cluster: actor latency, failover, memory per actor, connections
                    per node (its own options: --scenario cluster --help)
                    webhooks: signed deliveries against unsigned POSTs, commit-to-delivery
                    latency at 1,000 events/s (its own options: --scenario webhooks --help)
                    media: consumers one mediasoup worker carries, bare against Aula's room
                    code (its own options: --scenario media --help)
                    class: a teacher and 60 students on one worker, each page receiving what
                    it shows, against receiving everything (its own options: --scenario class --help)
                    storm: 2,000 students joining within 60 s on two nodes, per step, without
                    and with a flooding socket (its own options: --scenario storm --help)
                    recording: composing a class with a screen share, in x real time on one
                    core, against a bare ffmpeg encode (its own options: --scenario recording --help)
                    notes: the offline transcription engine's word error rate and x real time,
                    and the notes of a 30-minute class (its own options: --scenario notes --help)
  --duration S      seconds of each measured run                        [8]
  --warmup S        seconds of an unrecorded run before each one (0: none) [2]
  --connections N   wrk connections (and pgbench clients)                [64]
  --threads N       wrk threads                                         [1]
  --rounds N        repeat the whole set, interleaved; medians reported [1]
  --keys N          API keys the mint load is spread over               [1024]
  --users N         students the links are minted for                   [100]
  --pool N          single-use tokens minted for exchange (0: estimate) [0]
  --db-pool N       AULA_DATABASE_POOL of the node                    [10]
  --out FILE        JSON results                     [bench/results/<scenario>-<time>.json]
  --json            also print the results as one JSON object on stdout (the report goes to stderr)
  --no-pin          do not pin servers and wrk to cores
  --ablate LIST     after each mint run, mint again with parts of the node swapped for stand-ins:
                    a comma list of ${ABLATION_NAMES.join(', ')};
                    or "all": each alone, then all at once (see bench/lib/ablations.ts)
  --profile         run the node under --cpu-prof; the profile goes to bench/results/profiles/
                    (summarize it with: node --import tsx bench/profile.ts FILE)
  --node-args=ARGS  extra Node.js flags for the Aula node, e.g. =--no-turbo-inlining for a
                    profile whose self times stay with the functions that spend them

Environment: AULA_BENCH_DATABASE_URL (admin URL, a database is created and dropped),
AULA_BENCH_REDIS_URL. Needs wrk (apt-get install -y wrk).`;

const { opt, int } = benchArgs(USAGE, {
  scenario: { type: 'string', default: 'join' },
  duration: { type: 'string', default: '8' },
  warmup: { type: 'string', default: '2' },
  connections: { type: 'string', default: '64' },
  threads: { type: 'string', default: '1' },
  rounds: { type: 'string', default: '1' },
  keys: { type: 'string', default: '1024' },
  users: { type: 'string', default: '100' },
  pool: { type: 'string', default: '0' },
  'db-pool': { type: 'string', default: '10' },
  out: { type: 'string' },
  json: { type: 'boolean', default: false },
  'no-pin': { type: 'boolean', default: false },
  profile: { type: 'boolean', default: false },
  ablate: { type: 'string', default: '' },
  'node-args': { type: 'string', default: '' },
});

// with --json stdout carries the results alone; the report goes to stderr
if (opt.json) console.log = console.error.bind(console);
const duration = int('duration', opt.duration, 1);
const warmup = int('warmup', opt.warmup, 0);
const connections = int('connections', opt.connections, 1);
const threads = int('threads', opt.threads, 1);
const rounds = int('rounds', opt.rounds, 1);
const keyCount = int('keys', opt.keys, 1);
const userCount = int('users', opt.users, 1);
const dbPool = int('db-pool', opt['db-pool'], 1);
const SCENARIOS: Record<string, string[]> = {
  join: ['hello-get', 'hello-post', 'hello-shaped', 'healthz', 'mint', 'pgbench-insert', 'exchange'],
  mint: ['hello-get', 'hello-post', 'hello-shaped', 'healthz', 'mint'],
  exchange: ['hello-get', 'hello-post', 'healthz', 'pgbench-insert', 'exchange'],
};
const plan = SCENARIOS[opt.scenario] ? [...SCENARIOS[opt.scenario]!] : null;
if (!plan) {
  console.error(`unknown --scenario ${opt.scenario}\n\n${USAGE}`);
  process.exit(2);
}
/** scenario name to scenarios/<script>.lua, where they differ */
const SCRIPTS: Record<string, string> = { 'hello-get': 'get', 'hello-post': 'post', 'hello-shaped': 'shaped' };
/** Ablated mint runs are named `mint[<ablation>]`, or `mint[all]` for all at once. */
const ablations = new Map<string, Ablation[]>();
if (opt.ablate) {
  const names = opt.ablate === 'all' ? ABLATION_NAMES : opt.ablate.split(',').map((n) => n.trim());
  for (const n of names) {
    if (!(ABLATION_NAMES as string[]).includes(n)) {
      console.error(`unknown ablation ${n}; known: ${ABLATION_NAMES.join(', ')}`);
      process.exit(2);
    }
    ablations.set(`mint[${n}]`, [n as Ablation]);
  }
  if (opt.ablate === 'all') ablations.set('mint[all]', ALL_AT_ONCE);
  if (!plan.includes('mint')) plan.push('mint');
  plan.splice(plan.indexOf('mint') + 1, 0, ...ablations.keys());
}
if (threads > connections) {
  console.error('--threads cannot exceed --connections');
  process.exit(2);
}
/** Exchange runs at about 7k/s here; 10k/s leaves room, and running out is flagged anyway. */
const poolSize = int('pool', opt.pool, 0) || (plan.includes('exchange') ? Math.max(20_000, rounds * (warmup + duration) * 10_000) : 0);

const version = wrkVersion();
if (!version) {
  console.error('wrk is not installed. On Debian: apt-get update && apt-get install -y wrk');
  process.exit(2);
}
if (plan.includes('pgbench-insert') && !pgbenchVersion()) {
  console.error('pgbench is not installed (the exchange is measured against it). On Debian: apt-get install -y postgresql-contrib, or postgresql-client for pgbench alone');
  process.exit(2);
}
const pin = !opt['no-pin'] && availableParallelism() >= 2 && hasTaskset();
const SERVER_CORE = pin ? 0 : null;
const LOAD_CORE = pin ? 1 : null;
if (!pin) console.warn('warning: not pinning (needs taskset and 2 cores); server and wrk share the CPU');

const here = new URL('.', import.meta.url).pathname;
const profileDir = join(here, 'results', 'profiles');

interface AulaInfo {
  port: number;
  meetingId: string;
  keys: number;
  tokens: number;
  keysFile: string;
  usersFile: string;
  tokensFile: string;
}


/** CPU of other processes, in cores, above which a run is marked noisy */
const NOISY_CORES = 0.25;

// `npm run bench | head` must not leave the servers and the database behind
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
});

/** By status when the scenario counted them (its Lua has response()), else wrk's count of statuses above 399. */
const non2xx = (r: WrkResult): number =>
  Object.keys(r.statuses).length ? Object.entries(r.statuses).reduce((n, [code, c]) => (code.startsWith('2') ? n : n + c), 0) : r.errors.status;
const socketErrors = (r: WrkResult) => r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout;

/** A fresh database and Redis prefix, and the node in its own process; all removed by cleanup(). */
async function startAula(fixtures: string): Promise<ServerChild<AulaInfo> & { dbUrl: URL }> {
  const { dbUrl, redisPrefix } = await scratchBackends(cleanups);
  if (plan!.includes('pgbench-insert')) await createPgbenchTable(dbUrl);
  const t0 = performance.now();
  const aula = await startServer<AulaInfo>(
    'aula',
    join(here, 'servers/aula.ts'),
    {
      AULA_ENV: 'production',
      AULA_HOST: '127.0.0.1',
      AULA_PORT: '0',
      AULA_DATABASE_URL: dbUrl.toString(),
      AULA_DATABASE_POOL: String(dbPool),
      AULA_REDIS_URL: REDIS_URL,
      AULA_REDIS_PREFIX: redisPrefix,
      AULA_SECRET_KEY: randomBytes(32).toString('base64url'),
      AULA_LOG_LEVEL: 'warn',
      // these scenarios measure the control plane: no mediasoup workers
      AULA_MEDIA_WORKERS: '0',
      // Every exchange carries its own X-Forwarded-For, as behind a proxy: see bench/README.md.
      AULA_TRUST_PROXY: '1',
      BENCH_KEYS: String(keyCount),
      BENCH_USERS: String(userCount),
      BENCH_TOKENS: String(plan!.includes('exchange') ? poolSize : 0),
      BENCH_DIR: fixtures,
    },
    SERVER_CORE,
    {
      timeoutMs: 600_000,
      nodeArgs: [...(opt.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), ...opt['node-args'].split(/\s+/).filter(Boolean)],
    },
  );
  cleanups.push(() => aula.stop());
  console.log(`aula node ready in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${aula.info.keys} keys, ${userCount} users, ${aula.info.tokens} exchange tokens`);
  return Object.assign(aula, { dbUrl });
}

/** pgbench's single-row insert into the run's database, warmed up like the others: the exchange's database baseline. */
async function measurePgbench(dbUrl: URL, round: number): Promise<Run> {
  const go = (seconds: number, onStart?: (pid: number) => void) =>
    runPgbench({ dbUrl, seconds, clients: connections, threads, core: LOAD_CORE, ...(onStart ? { onStart } : {}) });
  const warm = warmup ? await go(warmup) : null;
  const pids: Record<string, number> = {};
  let before: CpuSnapshot | null = null;
  let after: CpuSnapshot | null = null;
  let timer: NodeJS.Timeout | undefined;
  const result = await go(duration, (pid) => {
    pids.wrk = pid;
    before = snapshot(pids);
    timer = setTimeout(() => (after = snapshot(pids)), duration * 1000 - 1150);
  });
  clearTimeout(timer);
  const cpu = usage(before, after);
  const flags = result.errors.status ? [`${result.errors.status} failed transactions`] : [];
  const notes = cpu && cpu.other > NOISY_CORES ? [`noisy: other processes used ${cpu.other.toFixed(2)} cores during the run`] : [];
  const rps = result.requests / (result.durationUs / 1e6);
  const c = cpu ? ` CPU: pgbench ${pct(cpu.groups.wrk ?? 0)}, postgres ${pct(cpu.groups.postgres!)}, other ${pct(cpu.other)}` : '';
  console.log(`  round ${round} ${'pgbench-insert'.padEnd(12)} ${fmtInt(rps).padStart(9)} tx/s   p99 ${ms(result.latencyUs.p99)}${c}${flags.length ? '  FLAGGED' : ''}`);
  return { scenario: 'pgbench-insert', round, rps, non2xx: result.errors.status, socketErrors: 0, serverLogLines: 0, cpu, warmup: warm, result, flags, notes };
}

async function main(): Promise<void> {
  const started = new Date();
  const fixtures = mkdtempSync(join(tmpdir(), 'aula-bench-'));
  cleanups.push(async () => rmSync(fixtures, { recursive: true, force: true }));

  console.log(`wrk: ${version}; pinned: ${pin ? `servers on core ${SERVER_CORE}, wrk on core ${LOAD_CORE}` : 'no'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`${rounds} round(s) of ${plan!.join(', ')}: ${warmup ? `${warmup} s warmup + ` : ''}${duration} s each, ${connections} connections, ${threads} wrk thread(s)`);

  const hello = await startServer<{ port: number }>('hello', join(here, 'servers/hello.ts'), {}, SERVER_CORE);
  cleanups.push(() => hello.stop());

  const aula = await startAula(fixtures);

  const runs: Run[] = [];
  let exchangeNext = 0;
  const mintLog: { at: number; requests: number }[] = [];
  const keyBudget = PLANS.enterprise.rateLimitPerMinute;

  for (let round = 1; round <= rounds; round++) {
    for (const scenario of plan!) {
      if (scenario === 'pgbench-insert') {
        runs.push(await measurePgbench(aula.dbUrl, round));
        continue;
      }
      const server = scenario.startsWith('hello') ? hello : aula;
      const url = `http://127.0.0.1:${server.info.port}/`;
      const ablated = ablations.get(scenario);
      const script = ablated ? 'mint' : (SCRIPTS[scenario] ?? scenario);
      const args = (): string[] => {
        if (script === 'mint') return [aula.info.keysFile, aula.info.usersFile, aula.info.meetingId, String(threads)];
        if (script === 'exchange') return [aula.info.tokensFile, String(exchangeNext), String(threads)];
        return [];
      };
      if (ablated) await aula.command({ ablate: ablated });

      const wrk = (seconds: number, onStart?: (pid: number) => void) =>
        runWrk({ url, script, args: args(), seconds, connections, threads, core: LOAD_CORE, ...(onStart ? { onStart } : {}) });
      let warm: WrkResult | null = null;
      if (warmup) {
        warm = await wrk(warmup);
        if (scenario === 'exchange') exchangeNext = warm.nextIndex;
        if (script === 'mint') mintLog.push({ at: Date.now(), requests: warm.issued });
      }
      const logsBefore = server.logLines();
      const pids: Record<string, number> = { server: server.pid };
      // The closing snapshot is taken just before wrk stops, while wrk's /proc entry still exists.
      let before: CpuSnapshot | null = null;
      let after: CpuSnapshot | null = null;
      let timer: NodeJS.Timeout | undefined;
      const result = await wrk(duration, (pid) => {
        pids.wrk = pid;
        before = snapshot(pids);
        timer = setTimeout(() => (after = snapshot(pids)), duration * 1000 - 150);
      });
      clearTimeout(timer);
      const cpu = usage(before, after);
      if (scenario === 'exchange') exchangeNext = result.nextIndex;
      if (ablated) await aula.command({ ablate: [] });

      const flags: string[] = [];
      const bad = non2xx(result);
      if (bad) flags.push(`${bad} non-2xx responses (${JSON.stringify(result.statuses)})`);
      if (socketErrors(result)) flags.push(`socket errors ${JSON.stringify(result.errors)}`);
      if (warm && (non2xx(warm) || socketErrors(warm))) flags.push(`warmup: ${non2xx(warm)} non-2xx, ${socketErrors(warm)} socket errors (${JSON.stringify(warm.statuses)})`);
      if (result.wrapped || warm?.wrapped) flags.push(`token pool of ${aula?.info.tokens} ran out: tokens were reused; rerun with a larger --pool`);
      if (script === 'mint') {
        mintLog.push({ at: Date.now(), requests: result.issued });
        const lastMinute = mintLog.filter((m) => m.at > Date.now() - 70_000).reduce((n, m) => n + m.requests, 0);
        if (lastMinute / aula.info.keys > keyBudget * 0.95) {
          flags.push(`about ${Math.round(lastMinute / aula.info.keys)} requests per key within a minute, near the ${keyBudget}/min plan budget: raise --keys`);
        }
      }
      const notes: string[] = [];
      if (cpu && cpu.other > NOISY_CORES) notes.push(`noisy: other processes used ${cpu.other.toFixed(2)} cores during the run`);
      const logLines = server.logLines() - logsBefore;
      if (logLines) notes.push(`${logLines} server log lines at warn or above (last: ${server.lastLines().at(-1)})`);
      const rps = result.requests / (result.durationUs / 1e6);
      runs.push({ scenario, round, rps, non2xx: bad, socketErrors: socketErrors(result), serverLogLines: logLines, cpu, warmup: warm, result, flags, notes });
      const c = cpu
        ? ` CPU: server ${pct(cpu.groups.server!)}, wrk ${pct(cpu.groups.wrk ?? 0)}, redis ${pct(cpu.groups.redis!)}, postgres ${pct(cpu.groups.postgres!)}, other ${pct(cpu.other)}`
        : '';
      console.log(`  round ${round} ${scenario.padEnd(12)} ${fmtInt(rps).padStart(9)} req/s  p99 ${ms(result.latencyUs.p99)}${c}${flags.length ? '  FLAGGED' : notes.length ? '  (see notes)' : ''}`);
    }
  }

  const rows = summarize(plan!, runs, NOISY_CORES);
  const perRound = ratiosPerRound(runs);

  printTable(rows);
  const flagged = runs.filter((r) => r.flags.length);
  for (const r of flagged) for (const f of r.flags) console.log(`FLAGGED ${r.scenario} round ${r.round}: ${f}`);
  for (const r of runs) for (const n of r.notes) console.log(`note ${r.scenario} round ${r.round}: ${n}`);
  const mint = rows.find((r) => r.scenario === 'mint');
  if (mint) {
    const byCpu = mint.cpuRatioToHelloGet === null ? '' : `, ${(mint.cpuRatioToHelloGet * 100).toFixed(1)}% by CPU per request`;
    console.log(`mint is ${(mint.ratioToHelloGet * 100).toFixed(1)}% of hello world by rate${byCpu} (guard: at least 25%): ${mint.ratioToHelloGet >= 0.25 ? 'met' : 'NOT met'}`);
    if (rows.some((r) => r.noisy)) console.log('Some runs were noisy: the rates and their ratios are unreliable, the CPU per request much less so. Rerun on a quiet machine or with --rounds 3.');
  }
  const exchange = rows.find((r) => r.scenario === 'exchange');
  const pgbench = rows.find((r) => r.scenario === 'pgbench-insert');
  if (exchange && pgbench) {
    const share = exchange.rps / pgbench.rps;
    console.log(`exchange is ${(share * 100).toFixed(1)}% of pgbench's single-row insert rate at the same concurrency (target: at least 50%): ${share >= 0.5 ? 'met' : 'NOT met'}`);
    if (exchange.serverUsPerRequest !== null) {
      console.log(`exchange costs the node ${exchange.serverUsPerRequest.toFixed(0)} µs of CPU (target: at most 100): ${exchange.serverUsPerRequest <= 100 ? 'met' : 'NOT met'}`);
    }
  }
  if (flagged.length) console.log('Runs with errors are not valid measurements.');

  const out = opt.out ?? join(here, 'results', `${opt.scenario}-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  const results = {
    scenario: opt.scenario,
    startedAt: started.toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, wrk: version, pinned: pin, loadAverageAtStart: loadavg() },
    options: { duration, warmup, connections, threads, rounds, keys: keyCount, users: userCount, pool: poolSize, dbPool },
    summary: rows,
    perRound,
    runs,
  };
  writeFileSync(out, JSON.stringify(results, null, 2) + '\n');
  if (opt.json) process.stdout.write(JSON.stringify(results) + '\n');
  console.log(`results: ${out}`);
  if (opt.profile) console.log(`node CPU profile (written when it exits): ${profileDir}/`);
  process.exitCode = flagged.length ? 1 : 0;
}

try {
  await main();
} catch (err) {
  console.error((err as Error).stack ?? err);
  process.exitCode = 1;
} finally {
  await cleanup();
}
