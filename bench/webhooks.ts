/**
 * The webhook benchmarks: `npm run bench -- --scenario webhooks [options]` (bench/run.ts hands over here).
 *
 *   throughput  signed deliveries per second to a local receiver (the real per-attempt path,
 *               `sendAttempt`: envelope body, both signature headers, a fresh SSRF-vetted undici Agent)
 *               against plain unsigned POSTs through the same `deliver()` (same body, only Content-Type
 *               and User-Agent), same client, same receiver, same concurrency, interleaved rounds; and a
 *               third line, raw undici `request()` on a keep-alive Agent, to show what the fresh
 *               connection per attempt costs; and `deliver()` with eight fixed signature headers, to
 *               tell computing them from sending them. CPU µs per delivery from the client's
 *               process.cpuUsage().
 *   latency     a real node in this process (Postgres, Redis), an organization on `pro` and one
 *               endpoint pointing at the receiver; events emitted at a steady rate (default 1,000/s),
 *               each in its own transaction (`transaction` + `outbox.emit`, so the after-commit wake-up
 *               fires as in production); per event, the time from its commit to the first request for
 *               its id at the receiver.
 *   cross       the same with a second node in its own process that owns the endpoint's shard: the
 *               events are committed (and fanned out) on this node, the sends happen on the other one
 *               after the wake-up over the Redis bus. Says whether the lag stayed flat: p99 of each
 *               second of emission (first third against last third, and its slope), the backlog
 *               sampled every second, and the backlog when emission stopped.
 *   cross-sweep the cross setup at rising rates (default 1,000, 1,250, 1,500, 2,000, ...), each step
 *               after a drained warmup; a step is sustained when the events were emitted at the rate,
 *               the backlog at its end was under half a second of events, its p99 did not rise from
 *               the first third of its seconds to the last, and everything arrived within 2 s. Stops at
 *               the first step that is not; reports the last that was: the highest sustained rate
 *               with two processes.
 *
 * The receiver (uWebSockets.js, answers 204 once the body is in) and the throughput client are this
 * same file run as child processes (BENCH_WEBHOOKS_ROLE=receiver|client), pinned to cores 0 and 1.
 * Times that cross processes are CLOCK_MONOTONIC (process.hrtime), which every process on the machine
 * shares. The database and the Redis prefix are made for the run and removed at the end.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import postgres from 'postgres';
import { benchArgs } from './lib/args.ts';
import { REDIS_URL, scratchBackends } from './lib/scratch.ts';

const SELF = new URL(import.meta.url).pathname;
/** Microseconds on CLOCK_MONOTONIC: comparable between processes on one machine. */
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- child processes: a line protocol compatible with bench/lib/rpc.ts ----------------------------

function serveRpc(info: Record<string, unknown>, commands: Record<string, (args: any) => unknown>): void {
  const reply = (m: unknown) => process.stdout.write(`BENCH_REPLY ${JSON.stringify(m)}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    const { id, cmd, args } = JSON.parse(line) as { id: number; cmd: string; args: unknown };
    Promise.resolve()
      .then(() => {
        const fn = commands[cmd];
        if (!fn) throw new Error(`unknown command ${cmd}`);
        return fn(args);
      })
      .then(
        (value) => reply({ id, ok: true, value }),
        (err: Error) => reply({ id, ok: false, error: err.stack ?? String(err) }),
      );
  });
  // The runner holds our stdin; when it goes away, so do we.
  process.stdin.on('end', () => process.exit(0));
  process.stdout.write(`BENCH_READY ${JSON.stringify({ ...info, pid: process.pid })}\n`);
}

/** The receiver: answers every POST with 204 once its body is in; records the first arrival of each Svc-Webhook-Id while asked to. */
async function receiverMain(): Promise<void> {
  const uws = (await import('uWebSockets.js')).default;
  let requests = 0;
  let recording = false;
  const first = new Map<string, number>();
  const app = uws.App();
  app.post('/*', (res, req) => {
    const at = nowUs();
    requests++;
    if (recording) {
      const id = req.getHeader('svc-webhook-id');
      if (id && !first.has(id)) first.set(id, at);
    }
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((_chunk, isLast) => {
      if (isLast && !aborted) res.cork(() => res.writeStatus('204 No Content').endWithoutBody());
    });
  });
  const port = await new Promise<number>((resolve) =>
    app.listen('127.0.0.1', 0, (socket) => {
      if (!socket) {
        process.stderr.write('receiver: could not listen\n');
        process.exit(1);
      }
      resolve(uws.us_socket_local_port(socket));
    }),
  );
  serveRpc(
    { port },
    {
      stats: () => ({ requests, recorded: first.size }),
      record: ({ on }: { on: boolean }) => {
        recording = on;
        if (on) first.clear();
        return { requests };
      },
      arrivals: () => ({ ids: [...first.keys()], at: [...first.values()] }),
    },
  );
}

/**
 * signed: `sendAttempt`, the real per-attempt path. unsigned: `deliver` with the same body and two headers.
 * presigned: `deliver` with one attempt's eight signature headers computed once, to tell the cost of
 * signing from the cost of sending six more headers. keepalive: undici `request` on a keep-alive Agent.
 */
type Mode = 'signed' | 'presigned' | 'unsigned' | 'keepalive';
const MODES: Mode[] = ['signed', 'presigned', 'unsigned', 'keepalive'];

/** The throughput client: runs one mode at a given concurrency for a given time; reports count and its own CPU. */
async function clientMain(): Promise<void> {
  const { Agent, request } = await import('undici');
  const { systemClock } = await import('../src/core/clock.ts');
  const { newId } = await import('../src/platform/ids.ts');
  const { eventBody, sendAttempt } = await import('../src/services/webhooks/envelope.ts');
  const { deliver } = await import('../src/services/webhooks/sender.ts');
  const { newSecret, signatureHeaders, USER_AGENT } = await import('../src/services/webhooks/signing.ts');

  const secret = newSecret();
  const secret2 = newSecret();
  const orgId = newId('org');
  // A realistic event: the envelope is 300 bytes or so.
  const ids = Array.from({ length: 4096 }, () => newId('evt'));
  const event = (i: number) => ({
    id: ids[i & 4095]!,
    orgId,
    type: 'participant.joined',
    data: { meetingId: 'mtg_01jd0000000000000000000000', userId: 'usr_01jd0000000000000000000000', participantId: 'prt_01jd0000000000000000000000', role: 'STUDENT', joinedAt: '2026-11-22T10:00:00.000Z' },
    createdAt: new Date('2026-11-22T10:00:00.000Z'),
  });
  const body = eventBody(event(0));
  const plainHeaders = { 'Content-Type': 'application/json', 'User-Agent': USER_AGENT };
  const fixedSigned = signatureHeaders({ eventId: event(0).id, timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] });

  type Result = { ok: boolean; error?: string };
  let keepAlive: InstanceType<typeof Agent> | null = null;
  const one: Record<Mode, (url: string, i: number) => Promise<Result>> = {
    signed: (url, i) =>
      sendAttempt({ url, event: event(i), secrets: [secret], clock: systemClock, allowPrivate: true }).then((r) => ({ ok: r.ok, ...(r.error ? { error: r.error.message } : {}) })),
    presigned: (url) =>
      deliver({ url, body, headers: fixedSigned, allowPrivate: true, clock: systemClock }).then((r) => ({ ok: r.ok, ...(r.error ? { error: r.error.message } : {}) })),
    unsigned: (url) =>
      deliver({ url, body, headers: plainHeaders, allowPrivate: true, clock: systemClock }).then((r) => ({ ok: r.ok, ...(r.error ? { error: r.error.message } : {}) })),
    keepalive: async (url) => {
      try {
        const res = await request(url, { method: 'POST', headers: plainHeaders, body, dispatcher: keepAlive! });
        for await (const _ of res.body) void _;
        return { ok: res.statusCode >= 200 && res.statusCode < 300 };
      } catch (err) {
        return { ok: false, error: (err as Error).message };
      }
    },
  };

  serveRpc(
    { bodyBytes: Buffer.byteLength(body) },
    {
      async run({ mode, concurrency, ms, url }: { mode: Mode; concurrency: number; ms: number; url: string }) {
        if (mode === 'keepalive') keepAlive = new Agent({ keepAliveTimeout: 30_000, connections: concurrency });
        let count = 0;
        let failures = 0;
        let firstError: string | undefined;
        let i = 0;
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const stopAt = t0 + ms;
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            while (performance.now() < stopAt) {
              const r = await one[mode](url, i++);
              if (r.ok) count++;
              else {
                failures++;
                firstError ??= r.error ?? 'not ok';
              }
            }
          }),
        );
        const elapsedMs = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        if (keepAlive) await keepAlive.close();
        keepAlive = null;
        return { count, failures, firstError, elapsedMs, cpuUs: cpu.user + cpu.system };
      },
      /** What signing itself costs: the envelope's JSON and the headers, one secret and two (a rotation). */
      micro() {
        const time = (n: number, fn: (i: number) => unknown) => {
          for (let i = 0; i < 2000; i++) fn(i);
          const t = performance.now();
          for (let i = 0; i < n; i++) fn(i);
          return ((performance.now() - t) * 1000) / n;
        };
        const ts = Math.floor(Date.now() / 1000);
        return {
          eventBodyUs: time(50_000, (i) => eventBody(event(i))),
          sign1Us: time(50_000, (i) => signatureHeaders({ eventId: ids[i & 4095]!, timestamp: ts, body, secrets: [secret] })),
          sign2Us: time(50_000, (i) => signatureHeaders({ eventId: ids[i & 4095]!, timestamp: ts, body, secrets: [secret, secret2] })),
        };
      },
    },
  );
}

// ---- the runner ----------------------------------------------------------------------------------

const USAGE = `npm run bench -- --scenario webhooks [options]

  --parts LIST          throughput,latency,cross,cross-sweep (default: the first three)
  --concurrency LIST    deliveries in flight in the throughput part            [8,64]
  --duration S          seconds of each throughput run                         [3]
  --rounds N            interleaved throughput rounds (order reversed every other round) [4]
  --rate LIST           events per second in the latency parts; a list runs each in turn [1000]
  --seconds S           seconds of steady emission in the latency parts        [15]
  --sweep-rates LIST    the steps of cross-sweep, events/s       [1000,1250,1500,2000,2500,3000,4000,5000]
  --sweep-retries N     a step not sustained while other processes used over a quarter of a core
                        is run again, up to N times                            [1]
  --warmup S            seconds of unrecorded emission before it (and throughput warmup runs) [2]
  --db-pool N           AULA_DATABASE_POOL of the nodes                      [10]
  --endpoint-concurrency N  AULA_WEBHOOK_CONCURRENCY of the nodes            [8, the default]
  --out FILE            JSON results                 [bench/results/webhooks-<time>.json]
  --json                print the results as one JSON object on stdout (the report goes to stderr)
  --profile             run node B (cross parts) under --cpu-prof; the profile goes to bench/results/profiles/
                        (summarize it with: node --import tsx bench/profile.ts FILE)
  --no-pin              do not pin the receiver and the client to cores

Environment: AULA_BENCH_DATABASE_URL (admin URL, a database is created and dropped), AULA_BENCH_REDIS_URL.`;

async function runnerMain(): Promise<void> {
  const { opt, int } = benchArgs(
    USAGE,
    {
      parts: { type: 'string', default: 'throughput,latency,cross' },
      concurrency: { type: 'string', default: '8,64' },
      duration: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '4' },
      rate: { type: 'string', default: '1000' },
      seconds: { type: 'string', default: '15' },
      'sweep-rates': { type: 'string', default: '1000,1250,1500,2000,2500,3000,4000,5000' },
      'sweep-retries': { type: 'string', default: '1' },
      warmup: { type: 'string', default: '2' },
      'db-pool': { type: 'string', default: '10' },
      'endpoint-concurrency': { type: 'string', default: '8' },
      out: { type: 'string' },
      json: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      'no-pin': { type: 'boolean', default: false },
    },
    'webhooks',
  );
  const PARTS = ['throughput', 'latency', 'cross', 'cross-sweep'];
  const parts = new Set(opt.parts.split(',').map((p) => p.trim()));
  for (const p of parts) {
    if (!PARTS.includes(p)) {
      console.error(`unknown part ${p}; known: ${PARTS.join(', ')}`);
      process.exit(2);
    }
  }
  const concurrencies = opt.concurrency.split(',').map((c) => int('concurrency', c.trim(), 1));
  const duration = int('duration', opt.duration, 1);
  const rounds = int('rounds', opt.rounds, 1);
  const rates = opt.rate.split(',').map((r) => int('rate', r.trim(), 1));
  const sweepRates = opt['sweep-rates'].split(',').map((r) => int('sweep-rates', r.trim(), 1));
  const sweepRetries = int('sweep-retries', opt['sweep-retries'], 0);
  const seconds = int('seconds', opt.seconds, 1);
  const warmup = int('warmup', opt.warmup, 0);
  const dbPool = int('db-pool', opt['db-pool'], 1);
  const endpointConcurrency = int('endpoint-concurrency', opt['endpoint-concurrency'], 1);
  const hasTaskset = spawnSync('taskset', ['--version']).status === 0;
  const pin = !opt['no-pin'] && availableParallelism() >= 2 && hasTaskset;
  const RECEIVER_CORE = pin ? 0 : null;
  const CLIENT_CORE = pin ? 1 : null;

  const here = new URL('.', import.meta.url).pathname;
  const started = new Date();

  const { startRpcChild } = await import('./lib/rpc.ts');
  const { snapshot, usage } = await import('./lib/cpu.ts');
  type RpcChild<T> = Awaited<ReturnType<typeof startRpcChild<T>>>;

  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch((err) => console.error(`cleanup: ${(err as Error).message}`));
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  process.once('SIGTERM', () => void cleanup().then(() => process.exit(143)));

  const results: Record<string, unknown> = {};
  const say = (s: string) => void (opt.json ? process.stderr : process.stdout).write(s + '\n');
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const pctl = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
  const median = (v: number[]) => {
    const s = [...v].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  };
  const msOf = (us: number) => (us >= 10_000_000 ? `${(us / 1e6).toFixed(1)} s` : us >= 100_000 ? `${(us / 1000).toFixed(0)} ms` : us >= 10_000 ? `${(us / 1000).toFixed(1)} ms` : `${(us / 1000).toFixed(2)} ms`);
  /** CPU of other processes, in cores, above which a run is marked noisy (as in bench/run.ts) */
  const NOISY_CORES = 0.25;

  try {
    say(`webhooks bench: parts ${[...parts].join(', ')}; pinned: ${pin ? `receiver on core ${RECEIVER_CORE}, throughput client on core ${CLIENT_CORE}` : 'no'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    const receiver = await startRpcChild<{ port: number; pid: number }>('receiver', SELF, { BENCH_WEBHOOKS_ROLE: 'receiver' }, { core: RECEIVER_CORE });
    cleanups.push(() => receiver.stop());
    const hookUrl = `http://127.0.0.1:${receiver.info.port}/hook`;

    // ---- throughput ----------------------------------------------------------------------------
    if (parts.has('throughput')) {
      const client = await startRpcChild<{ bodyBytes: number; pid: number }>('client', SELF, { BENCH_WEBHOOKS_ROLE: 'client' }, { core: CLIENT_CORE });
      cleanups.push(() => client.stop());
      type RunOut = { count: number; failures: number; firstError?: string; elapsedMs: number; cpuUs: number };
      interface TRun {
        mode: Mode;
        concurrency: number;
        round: number;
        rate: number;
        clientUsPerDelivery: number;
        receiverUsPerDelivery: number | null;
        clientCores: number | null;
        receiverCores: number | null;
        otherCores: number | null;
        noisy: boolean;
        failures: number;
        firstError?: string;
      }
      const runs: TRun[] = [];
      const runOnce = async (mode: Mode, concurrency: number, ms: number) => {
        const pids = { client: client.pid, receiver: receiver.pid };
        const before = snapshot(pids);
        const r = await client.call<RunOut>('run', { mode, concurrency, ms, url: hookUrl });
        const cpu = usage(before, snapshot(pids));
        return { r, cpu };
      };
      say(`\nthroughput: ${MODES.join(' / ')} at ${concurrencies.join(' and ')} in flight, ${rounds} interleaved rounds of ${duration} s runs (body ${client.info.bodyBytes} bytes)`);
      if (warmup) for (const c of concurrencies) for (const m of MODES) await runOnce(m, c, warmup * 1000);
      for (let round = 1; round <= rounds; round++) {
        const order = round % 2 ? MODES : [...MODES].reverse();
        for (const c of concurrencies) {
          for (const mode of order) {
            const { r, cpu } = await runOnce(mode, c, duration * 1000);
            const rateNow = r.count / (r.elapsedMs / 1000);
            const done = r.count + r.failures;
            const recvCores = cpu?.groups.receiver ?? null;
            const run: TRun = {
              mode,
              concurrency: c,
              round,
              rate: rateNow,
              clientUsPerDelivery: done ? r.cpuUs / done : NaN,
              receiverUsPerDelivery: recvCores === null || !done ? null : (recvCores * r.elapsedMs * 1000) / done,
              clientCores: cpu?.groups.client ?? null,
              receiverCores: recvCores,
              otherCores: cpu?.other ?? null,
              noisy: (cpu?.other ?? 0) > NOISY_CORES,
              failures: r.failures,
              ...(r.firstError ? { firstError: r.firstError } : {}),
            };
            runs.push(run);
            say(
              `  round ${round} c=${String(c).padEnd(3)} ${mode.padEnd(9)} ${fmt(rateNow).padStart(7)}/s  client ${run.clientUsPerDelivery.toFixed(0).padStart(4)} µs/delivery` +
                `  receiver ${run.receiverUsPerDelivery === null ? '-' : run.receiverUsPerDelivery.toFixed(0)} µs` +
                `  other ${run.otherCores === null ? '-' : run.otherCores.toFixed(2)} cores${run.noisy ? ' (~)' : ''}${r.failures ? `  ${r.failures} FAILED (${r.firstError})` : ''}`,
            );
          }
        }
      }
      const micro = await client.call<{ eventBodyUs: number; sign1Us: number; sign2Us: number }>('micro');
      const LABELS: Record<Mode, string> = {
        signed: '**signed** (`sendAttempt`)',
        presigned: '`deliver`, eight fixed signature headers',
        unsigned: 'unsigned (`deliver`, two headers)',
        keepalive: 'keep-alive undici `request`',
      };
      const rows: Record<string, unknown>[] = [];
      say(`\n| in flight | path | deliveries/s | vs unsigned (median of rounds) | client CPU µs/delivery | CPU vs unsigned | receiver CPU µs/delivery | noisy rounds |`);
      say(`|---:|---|---:|---:|---:|---:|---:|---:|`);
      for (const c of concurrencies) {
        for (const mode of MODES) {
          const mine = runs.filter((r) => r.concurrency === c && r.mode === mode);
          const ratios = mine.map((r) => r.rate / runs.find((u) => u.concurrency === c && u.round === r.round && u.mode === 'unsigned')!.rate);
          // as the join scenario's "CPU vs GET": the baseline's µs over this path's, so that it reads like the rate ratio
          const cpuRatios = mine.map((r) => runs.find((u) => u.concurrency === c && u.round === r.round && u.mode === 'unsigned')!.clientUsPerDelivery / r.clientUsPerDelivery);
          const row = {
            concurrency: c,
            mode,
            rate: median(mine.map((r) => r.rate)),
            ratioToUnsigned: median(ratios),
            ratiosPerRound: ratios,
            clientUsPerDelivery: median(mine.map((r) => r.clientUsPerDelivery)),
            cpuRatioToUnsigned: median(cpuRatios),
            receiverUsPerDelivery: mine.every((r) => r.receiverUsPerDelivery !== null) ? median(mine.map((r) => r.receiverUsPerDelivery!)) : null,
            noisyRounds: mine.filter((r) => r.noisy).length,
            failures: mine.reduce((n, r) => n + r.failures, 0),
          };
          rows.push(row);
          say(
            `| ${c} | ${LABELS[mode]} | ${fmt(row.rate)} | ${row.ratioToUnsigned.toFixed(3)} |` +
              ` ${row.clientUsPerDelivery.toFixed(0)} | ${row.cpuRatioToUnsigned.toFixed(3)} | ${row.receiverUsPerDelivery === null ? '-' : row.receiverUsPerDelivery.toFixed(0)} | ${row.noisyRounds}/${mine.length} |`,
          );
        }
      }
      for (const row of rows) if (row.failures) say(`FAILED deliveries: ${row.failures} at c=${row.concurrency} ${row.mode}`);
      for (const c of concurrencies) {
        const s = rows.find((r) => r.concurrency === c && r.mode === 'signed')!;
        const u = rows.find((r) => r.concurrency === c && r.mode === 'unsigned')!;
        const k = rows.find((r) => r.concurrency === c && r.mode === 'keepalive')!;
        const p = rows.find((r) => r.concurrency === c && r.mode === 'presigned')!;
        const us = (r: Record<string, unknown>) => r.clientUsPerDelivery as number;
        say(
          `at ${c} in flight: signed runs at ${((s.ratioToUnsigned as number) * 100).toFixed(1)}% of unsigned by rate (per-round ratios ${(s.ratiosPerRound as number[]).map((x) => x.toFixed(3)).join(' ')}),` +
            ` ${(us(s) - us(u)).toFixed(1)} µs more client CPU per delivery (six more headers: ${(us(p) - us(u)).toFixed(1)}, signing them: ${(us(s) - us(p)).toFixed(1)});` +
            ` a keep-alive connection is ${(k.ratioToUnsigned as number).toFixed(2)}x the rate of a fresh one, ${((u.clientUsPerDelivery as number) - (k.clientUsPerDelivery as number)).toFixed(0)} µs less client CPU`,
        );
      }
      say(`signing alone (client process, core ${CLIENT_CORE ?? '-'}): eventBody ${micro.eventBodyUs.toFixed(2)} µs, signatureHeaders with one secret ${micro.sign1Us.toFixed(2)} µs, with two (rotation) ${micro.sign2Us.toFixed(2)} µs`);
      results.throughput = { rows, runs, micro, bodyBytes: client.info.bodyBytes };
      await client.stop();
    }

    // ---- latency: a real node in this process ------------------------------------------------
    if (parts.has('latency') || parts.has('cross') || parts.has('cross-sweep')) {
      const { loadConfig } = await import('../src/platform/config.ts');
      const { startNode } = await import('../src/server/node.ts');
      const { createLogger } = await import('../src/platform/logger.ts');
      const { createOrg } = await import('../src/services/orgs.ts');
      const { transaction } = await import('../src/platform/db/tx.ts');
      const { newId } = await import('../src/platform/ids.ts');
      const { iso } = await import('../src/core/clock.ts');
      const { newSecret } = await import('../src/services/webhooks/signing.ts');
      const { webhookActor } = await import('../src/services/webhooks/envelope.ts');
      const { shardOf } = await import('../src/platform/cluster/cluster.ts');
      const { desiredOwners } = await import('../src/platform/cluster/placement.ts');

      const { dbUrl, redisPrefix: prefix } = await scratchBackends(cleanups);
      const nodeEnv = {
        AULA_ENV: 'test',
        AULA_HOST: '127.0.0.1',
        AULA_PORT: '0',
        AULA_DATABASE_URL: dbUrl.toString(),
        AULA_DATABASE_POOL: String(dbPool),
        AULA_REDIS_URL: REDIS_URL,
        AULA_REDIS_PREFIX: prefix,
        // Both nodes must open the endpoint's sealed secret: one key for the run.
        AULA_SECRET_KEY: randomBytes(32).toString('base64url'),
        AULA_LOG_LEVEL: 'warn',
        AULA_WEBHOOK_CONCURRENCY: String(endpointConcurrency),
        WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
      };
      const nodeConfig = loadConfig(nodeEnv);
      // its logs on stderr: with --json, stdout holds only the results
      const node = await startNode({ config: nodeConfig, logger: createLogger(nodeConfig, {}, 2) });
      cleanups.push(() => node.close());
      const { app } = node;
      const { sql } = app;

      const addEndpoint = async (orgId: string, pick: (id: string) => boolean = () => true) => {
        let id: string;
        do id = newId('whe', app.clock.now());
        while (!pick(id));
        const now = iso(app.clock.now());
        await sql`insert into webhook_endpoints (id, org_id, url, events, status, secret_sealed, created_at, updated_at)
          values (${id}, ${orgId}, ${hookUrl}, ${['*']}, 'ACTIVE', ${app.tokens.data.seal(newSecret())}, ${now}, ${now})`;
        return id;
      };
      const waitFor = async (what: string, ok: () => Promise<boolean> | boolean, timeoutMs = 30_000) => {
        const until = performance.now() + timeoutMs;
        while (!(await ok())) {
          if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
          await sleep(50);
        }
      };

      interface Emitted {
        id: string;
        schedUs: number;
        commitUs: number;
      }
      /** Open loop: event i is due at t0 + i/rate, whatever happened to the earlier ones; each in its own transaction. */
      const emit = async (orgId: string, perSecond: number, secs: number): Promise<{ emitted: Emitted[]; errors: number; maxOutstanding: number }> => {
        const total = Math.round(perSecond * secs);
        const stepUs = 1e6 / perSecond;
        const emitted: Emitted[] = [];
        const outstanding = new Set<Promise<void>>();
        let errors = 0;
        let maxOutstanding = 0;
        let n = 0;
        const t0 = nowUs();
        while (n < total) {
          const due = Math.min(total, Math.floor((nowUs() - t0) / stepUs) + 1);
          while (n < due) {
            const schedUs = t0 + n * stepUs;
            const i = n++;
            const p: Promise<void> = transaction(sql, (tx) =>
              app.outbox.emit(tx, orgId, 'participant.joined', { meetingId: 'mtg_01jd0000000000000000000000', userId: `usr_${String(i).padStart(26, '0')}`, role: 'STUDENT' }, app.clock.now()),
            ).then(
              (id) => void emitted.push({ id, schedUs, commitUs: nowUs() }),
              () => void errors++,
            );
            outstanding.add(p);
            void p.finally(() => outstanding.delete(p));
          }
          maxOutstanding = Math.max(maxOutstanding, outstanding.size);
          await sleep(1);
        }
        await Promise.all(outstanding);
        return { emitted, errors, maxOutstanding };
      };

      /** How long the latency parts wait, after emission, for every event to arrive; the percentiles leave out what has not (reported as missing). */
      const DRAIN_TIMEOUT_MS = 300_000;
      // The runner's own connection for watching the backlog, so that sampling it takes nothing from the node's pool.
      const watch = postgres(dbUrl.toString(), { max: 1, onnotice: () => {} });
      cleanups.push(() => watch.end({ timeout: 1 }));
      const backlog = async (endpointId: string) =>
        (await watch<{ undispatched: number; pending: number }[]>`select
          (select count(*)::int from outbox where dispatched_at is null) as undispatched,
          (select count(*)::int from webhook_messages where endpoint_id = ${endpointId} and status = 'PENDING') as pending`)[0]!;

      /** Least-squares slope of ys against xs. */
      const slope = (xs: number[], ys: number[]): number => {
        const n = xs.length;
        if (n < 2) return NaN;
        const mx = xs.reduce((a, b) => a + b, 0) / n;
        const my = ys.reduce((a, b) => a + b, 0) / n;
        let num = 0;
        let den = 0;
        for (let i = 0; i < n; i++) {
          num += (xs[i]! - mx) * (ys[i]! - my);
          den += (xs[i]! - mx) ** 2;
        }
        return den ? num / den : NaN;
      };
      /** Whether the lag stayed flat: p99 of the last third of the seconds against the first third (a queue that grows shows as a last third far above the first). */
      const P99_RISE_FACTOR = 1.5;
      const P99_RISE_MARGIN_US = 20_000;

      const measure = async (label: string, rate: number, orgId: string, endpointId: string, extraPids: Record<string, number> = {}) => {
        if (warmup) {
          say(`  ${label}: warmup, ${warmup} s at ${rate}/s`);
          await emit(orgId, rate, warmup);
          await waitFor('the warmup to drain', async () => {
            const b = await backlog(endpointId);
            return b.undispatched === 0 && b.pending === 0;
          }, DRAIN_TIMEOUT_MS);
        }
        await receiver.call('record', { on: true });
        const pids = { node: process.pid, receiver: receiver.pid, ...extraPids };
        const cpuBefore = snapshot(pids);
        const started = nowUs();
        // the backlog once a second while events are emitted: a queue that grows is the direct sign of not keeping up
        const backlogSamples: { atS: number; undispatched: number; pending: number }[] = [];
        let sampling = true;
        const sampler = (async () => {
          for (let next = 1; sampling; next++) {
            await sleep(Math.max(0, started / 1000 + next * 1000 - nowUs() / 1000));
            if (!sampling) break;
            const atS = (nowUs() - started) / 1e6;
            const b = await backlog(endpointId);
            if (sampling) backlogSamples.push({ atS, ...b });
          }
        })();
        const { emitted, errors, maxOutstanding } = await emit(orgId, rate, seconds);
        const endedUs = nowUs();
        sampling = false;
        const cpu = usage(cpuBefore, snapshot(pids));
        const atEnd = await backlog(endpointId);
        backlogSamples.push({ atS: (endedUs - started) / 1e6, ...atEnd });
        const receivedAtEnd = (await receiver.call<{ recorded: number }>('stats')).recorded;
        let drainedUs: number | null = null;
        try {
          await waitFor('every event to arrive', async () => (await receiver.call<{ recorded: number }>('stats')).recorded >= emitted.length, DRAIN_TIMEOUT_MS);
          drainedUs = nowUs() - endedUs;
        } catch {
          // reported below as missing
        }
        await waitFor('the outcomes to be recorded', async () => (await backlog(endpointId)).pending === 0, 30_000).catch(() => undefined);
        await sampler;
        const { ids, at } = await receiver.call<{ ids: string[]; at: number[] }>('arrivals');
        await receiver.call('record', { on: false });
        const arrival = new Map(ids.map((id, i) => [id, at[i]!]));
        const lat: number[] = [];
        const perSecond = new Map<number, number[]>();
        const arrivalsPerSecond = new Array<number>(seconds).fill(0);
        let missing = 0;
        for (const e of emitted) {
          const a = arrival.get(e.id);
          if (a === undefined) {
            missing++;
            continue;
          }
          const l = a - e.commitUs;
          lat.push(l);
          const s = Math.floor((e.schedUs - started) / 1e6);
          (perSecond.get(s) ?? perSecond.set(s, []).get(s)!).push(l);
          const as = Math.floor((a - started) / 1e6);
          if (as >= 0 && as < seconds) arrivalsPerSecond[as]!++;
        }
        lat.sort((a, b) => a - b);
        // Deliveries (first arrivals of this window's events) per second while events were being emitted: below the event rate, a backlog grows.
        const deliveredDuring = emitted.reduce((n, e) => {
          const a = arrival.get(e.id);
          return a !== undefined && a <= endedUs ? n + 1 : n;
        }, 0);
        const lag = emitted.map((e) => e.commitUs - e.schedUs).sort((a, b) => a - b);
        const statuses = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from webhook_messages where endpoint_id = ${endpointId} group by status`;
        const attempts = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from webhook_attempts where endpoint_id = ${endpointId} group by status`;
        const commitSpan = emitted.length > 1 ? (Math.max(...emitted.map((e) => e.commitUs)) - Math.min(...emitted.map((e) => e.commitUs))) / 1e6 : NaN;
        const p99BySecondUs = [...perSecond.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => pctl(v.sort((a, b) => a - b), 99));
        const p50BySecondUs = [...perSecond.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => pctl(v, 50));
        // Is the lag flat? The per-second p99s, first third against last third (medians, so one noisy second does not decide), and their slope.
        const third = Math.max(1, Math.floor(p99BySecondUs.length / 3));
        const p99FirstThirdUs = median(p99BySecondUs.slice(0, third));
        const p99LastThirdUs = median(p99BySecondUs.slice(-third));
        const p99SlopeMsPerS = slope(p99BySecondUs.map((_, i) => i), p99BySecondUs.map((u) => u / 1000));
        const secondHalf = backlogSamples.filter((b) => b.atS >= seconds / 2);
        const backlogSlopePerS = slope(secondHalf.map((b) => b.atS), secondHalf.map((b) => b.undispatched + b.pending));
        const achievedRate = emitted.length / ((endedUs - started) / 1e6);
        const backlogEnd = atEnd.undispatched + atEnd.pending;
        const p99NotRising = p99LastThirdUs <= P99_RISE_FACTOR * p99FirstThirdUs + P99_RISE_MARGIN_US;
        const keptUp = backlogEnd <= rate * 0.5 && drainedUs !== null && drainedUs < 2e6 && missing === 0;
        const res = {
          label,
          targetRate: rate,
          seconds,
          emitted: emitted.length,
          emitErrors: errors,
          achievedRate,
          deliveredRateDuringEmission: deliveredDuring / ((endedUs - started) / 1e6),
          firstAttemptsBySecond: arrivalsPerSecond,
          commitRate: emitted.length / commitSpan,
          emitLagUs: { p50: pctl(lag, 50), p99: pctl(lag, 99), max: lag.at(-1) ?? NaN },
          maxOutstandingEmits: maxOutstanding,
          latencyUs: { p50: pctl(lat, 50), p90: pctl(lat, 90), p99: pctl(lat, 99), p999: pctl(lat, 99.9), max: lat.at(-1) ?? NaN, mean: lat.reduce((a, b) => a + b, 0) / lat.length },
          p50BySecondUs,
          p99BySecondUs,
          trend: {
            p99FirstThirdUs,
            p99LastThirdUs,
            p99SlopeMsPerS,
            backlogBySecond: backlogSamples.map((b) => ({ atS: Math.round(b.atS * 10) / 10, events: b.undispatched, messages: b.pending })),
            backlogSlopePerS,
            p99NotRising,
            /** the lag stayed flat: the backlog at the end under half a second of events and p99 not rising */
            flat: backlogEnd <= rate * 0.5 && p99NotRising,
          },
          backlogAtEnd: { ...atEnd, notYetReceived: emitted.length - receivedAtEnd },
          drainedAfterUs: drainedUs,
          missing,
          messages: Object.fromEntries(statuses.map((s) => [s.status, s.n])),
          attempts: Object.fromEntries(attempts.map((s) => [s.status, s.n])),
          cpu: cpu && {
            nodeCores: cpu.groups.node,
            nodeUsPerEvent: (cpu.groups.node! * (endedUs - started)) / emitted.length,
            ...(extraPids.nodeB ? { nodeBCores: cpu.groups.nodeB, nodeBUsPerEvent: (cpu.groups.nodeB! * (endedUs - started)) / emitted.length } : {}),
            postgresCores: cpu.groups.postgres,
            redisCores: cpu.groups.redis,
            receiverCores: cpu.groups.receiver,
            otherCores: cpu.other,
          },
          keptUp,
          /** for the sweep: emitted at the rate (within 3%), kept up, and the lag flat */
          sustained: achievedRate >= rate * 0.97 && keptUp && p99NotRising,
        };
        say(
          `  ${label}: ${fmt(res.emitted)} events in ${seconds} s, ${fmt(res.achievedRate)}/s (${errors} emit errors; commit behind schedule p50 ${msOf(res.emitLagUs.p50)}, p99 ${msOf(res.emitLagUs.p99)}, max ${msOf(res.emitLagUs.max)})`,
        );
        say(
          `    commit -> first attempt at the receiver: p50 ${msOf(res.latencyUs.p50)}, p90 ${msOf(res.latencyUs.p90)}, p99 ${msOf(res.latencyUs.p99)}, p99.9 ${msOf(res.latencyUs.p999)}, max ${msOf(res.latencyUs.max)}${missing ? `; ${missing} had NOT ARRIVED after ${DRAIN_TIMEOUT_MS / 1000} s (left out)` : ''}`,
        );
        say(`    first attempts during emission: ${fmt(res.deliveredRateDuringEmission)}/s; by second: ${arrivalsPerSecond.map(fmt).join(' ')}`);
        say(`    p99 by second of emission: ${res.p99BySecondUs.map((u) => (u / 1000).toFixed(1)).join(' ')} ms`);
        say(
          `    lag trend: p99 first third ${msOf(p99FirstThirdUs)}, last third ${msOf(p99LastThirdUs)} (${p99NotRising ? 'not rising' : 'RISING'}), slope ${p99SlopeMsPerS.toFixed(1)} ms/s;` +
            ` backlog by second ${backlogSamples.map((b) => fmt(b.undispatched + b.pending)).join(' ')} (second half: ${backlogSlopePerS >= 0 ? '+' : ''}${backlogSlopePerS.toFixed(0)}/s): ${res.trend.flat ? 'flat' : 'NOT FLAT'}`,
        );
        say(
          `    at the end of emission: ${atEnd.undispatched} events not fanned out, ${atEnd.pending} messages pending, ${res.backlogAtEnd.notYetReceived} not yet received; all received ${drainedUs === null ? 'NEVER (timed out)' : `${(drainedUs / 1000).toFixed(0)} ms later`}: ${keptUp ? 'kept up' : 'DID NOT KEEP UP'}`,
        );
        say(`    messages ${JSON.stringify(res.messages)}, attempts ${JSON.stringify(res.attempts)}`);
        if (res.cpu) {
          say(
            `    CPU (cores): this process (node${extraPids.nodeB ? ' A' : ''} and the emitter) ${res.cpu.nodeCores!.toFixed(2)} = ${res.cpu.nodeUsPerEvent.toFixed(0)} µs/event` +
              `${extraPids.nodeB ? `, node B ${res.cpu.nodeBCores!.toFixed(2)} = ${res.cpu.nodeBUsPerEvent!.toFixed(0)} µs/event` : ''}` +
              `, postgres ${res.cpu.postgresCores!.toFixed(2)}, redis ${res.cpu.redisCores!.toFixed(2)}, receiver ${res.cpu.receiverCores!.toFixed(2)}, other ${res.cpu.otherCores.toFixed(2)}${res.cpu.otherCores > NOISY_CORES ? ' (~ noisy)' : ''}`,
          );
        }
        return res;
      };

      if (parts.has('latency')) {
        say(`\nlatency: one node in this process (AULA_DATABASE_POOL=${dbPool}, AULA_WEBHOOK_CONCURRENCY=${endpointConcurrency}), one endpoint, ${rates.join(', then ')} events/s for ${seconds} s`);
        const org = await createOrg(sql, app.clock, { name: 'Bench Webhooks', plan: 'pro' });
        const ep = await addEndpoint(org.id);
        await waitFor('the node to own the endpoint\'s shard', () => app.cluster.owned().has(shardOf(webhookActor(ep))));
        results.latency = [];
        for (const rate of rates) (results.latency as unknown[]).push(await measure(`one node, ${rate}/s`, rate, org.id, ep));
        await sql`update webhook_endpoints set status = 'DISABLED' where id = ${ep}`;
      }

      if (parts.has('cross') || parts.has('cross-sweep')) {
        say(`\ncross: events committed on node A (this process), the endpoint's shard owned by node B (its own process): the wake-up goes over the Redis bus`);
        const profileDir = join(here, 'results', 'profiles');
        const b = await startRpcChild<{ nodeId: string; pid: number }>('node-b', join(here, 'servers/cluster-node.ts'), nodeEnv, {
          core: null,
          ...(opt.profile ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profileDir] } : {}),
        });
        if (opt.profile) say(`node B (pid ${b.pid}) runs under --cpu-prof; its profile is written to ${profileDir}/ when it exits`);
        cleanups.push(() => b.stop());
        const ids = [app.cluster.nodeId, b.info.nodeId];
        const desired = desiredOwners(ids);
        const org = await createOrg(sql, app.clock, { name: 'Bench Webhooks Cross', plan: 'pro' });
        const ep = await addEndpoint(org.id, (id) => desired[shardOf(webhookActor(id))] === b.info.nodeId);
        const shard = shardOf(webhookActor(ep));
        await waitFor(
          'node B to own the endpoint\'s shard',
          async () => !app.cluster.owned().has(shard) && (await b.call<{ owned: number[] }>('info')).owned.includes(shard),
          60_000,
        );
        if (parts.has('cross')) {
          results.cross = [];
          for (const rate of rates) (results.cross as unknown[]).push(await measure(`A commits, B sends, ${rate}/s`, rate, org.id, ep, { nodeB: b.pid }));
        }
        if (parts.has('cross-sweep')) {
          say(`\ncross-sweep: ${sweepRates.join(', ')} events/s, ${seconds} s each, until a step is not sustained`);
          type Step = Awaited<ReturnType<typeof measure>> & { noisy: boolean; retried: number };
          const steps: Step[] = [];
          const discarded: Step[] = [];
          for (const rate of sweepRates) {
            let r: Step;
            for (let attempt = 0; ; attempt++) {
              const m = await measure(`sweep, A commits, B sends, ${rate}/s`, rate, org.id, ep, { nodeB: b.pid });
              r = { ...m, noisy: (m.cpu?.otherCores ?? 0) > NOISY_CORES, retried: attempt };
              say(
                `    => ${r.sustained ? 'sustained' : `NOT sustained (${[r.achievedRate < rate * 0.97 ? `emitted ${fmt(r.achievedRate)}/s` : '', r.keptUp ? '' : 'did not keep up', r.trend.p99NotRising ? '' : 'p99 rising'].filter(Boolean).join(', ')})`}` +
                  `${r.noisy ? ` (~ noisy: other processes used ${r.cpu!.otherCores.toFixed(2)} cores)` : ''}`,
              );
              if (r.sustained || !r.noisy || attempt >= sweepRetries) break;
              discarded.push(r);
              say(`    running the step again (noisy)`);
            }
            steps.push(r);
            if (!r.sustained) break;
          }
          const best = steps.filter((s) => s.sustained).at(-1);
          results.crossSweep = { steps, discarded, highestSustainedRate: best?.targetRate ?? null, firstNotSustained: steps.find((s) => !s.sustained)?.targetRate ?? null };
        }
        await b.stop();
      }
    }

    const lat = ['latency', 'cross'].flatMap((k) => (results[k] as Record<string, any>[] | undefined) ?? []);
    if (lat.length) {
      say(`\n| part | events/s | first attempts/s while emitting | p50 | p99 | max | backlog at the end (events + messages) | all arrived after | kept up |`);
      say(`|---|---:|---:|---:|---:|---:|---:|---:|---|`);
      for (const r of lat) {
        say(
          `| ${r.label} | ${fmt(r.achievedRate)} | ${fmt(r.deliveredRateDuringEmission)} | ${msOf(r.latencyUs.p50)} | ${msOf(r.latencyUs.p99)} | ${msOf(r.latencyUs.max)} |` +
            ` ${fmt(r.backlogAtEnd.undispatched + r.backlogAtEnd.pending)} | ${r.drainedAfterUs === null ? 'timed out' : msOf(r.drainedAfterUs)} | ${r.keptUp ? 'yes' : '**no**'} |`,
        );
      }
      say(`\n| part | p99 by second of emission (ms) | p99 first third | p99 last third | slope | backlog by second | CPU: A, B, Postgres, other processes | flat |`);
      say(`|---|---|---:|---:|---:|---|---|---|`);
      for (const r of lat) {
        say(
          `| ${r.label} | ${(r.p99BySecondUs as number[]).map((u) => (u / 1000).toFixed(0)).join(' ')} | ${msOf(r.trend.p99FirstThirdUs)} | ${msOf(r.trend.p99LastThirdUs)} | ${r.trend.p99SlopeMsPerS.toFixed(1)} ms/s |` +
            ` ${(r.trend.backlogBySecond as { events: number; messages: number }[]).map((b) => fmt(b.events + b.messages)).join(' ')} |` +
            ` ${r.cpu ? [r.cpu.nodeCores, r.cpu.nodeBCores, r.cpu.postgresCores, r.cpu.otherCores].filter((c: number | undefined) => c !== undefined).map((c: number) => c.toFixed(2)).join(', ') : '-'} | ${r.trend.flat ? 'yes' : '**no**'} |`,
        );
      }
    }
    const sweep = results.crossSweep as { steps: Record<string, any>[]; highestSustainedRate: number | null; firstNotSustained: number | null } | undefined;
    if (sweep) {
      say(`\n| cross, events/s | emitted/s | first attempts/s while emitting | p50 | p99 | p99 first → last third | backlog at the end | all arrived after | other processes | sustained |`);
      say(`|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|`);
      for (const r of sweep.steps) {
        say(
          `| ${fmt(r.targetRate)}${r.noisy ? ' (~)' : ''}${r.retried ? ` (run ${r.retried + 1})` : ''} | ${fmt(r.achievedRate)} | ${fmt(r.deliveredRateDuringEmission)} | ${msOf(r.latencyUs.p50)} | ${msOf(r.latencyUs.p99)} | ${msOf(r.trend.p99FirstThirdUs)} → ${msOf(r.trend.p99LastThirdUs)} |` +
            ` ${fmt(r.backlogAtEnd.undispatched + r.backlogAtEnd.pending)} | ${r.drainedAfterUs === null ? 'timed out' : msOf(r.drainedAfterUs)} | ${r.cpu ? `${r.cpu.otherCores.toFixed(2)} cores` : '-'} | ${r.sustained ? 'yes' : '**no**'} |`,
        );
      }
      say(
        `highest sustained rate with two processes: ${sweep.highestSustainedRate === null ? 'none of the steps' : `${fmt(sweep.highestSustainedRate)} events/s`}` +
          `${sweep.firstNotSustained === null ? ' (every step sustained: raise --sweep-rates)' : `; ${fmt(sweep.firstNotSustained)}/s was not`}`,
      );
    }

    const out = opt.out ?? join(here, 'results', `webhooks-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
    mkdirSync(join(out, '..'), { recursive: true });
    const doc = {
      scenario: 'webhooks',
      startedAt: started.toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, pinned: pin, loadAverageAtStart: loadavg() },
      options: { parts: [...parts], concurrencies, duration, rounds, rates, sweepRates, seconds, warmup, dbPool, endpointConcurrency },
      results,
    };
    writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
    say(`\nresults: ${out}`);
    if (opt.json) process.stdout.write(JSON.stringify(doc) + '\n');
  } finally {
    await cleanup();
  }
}

const role = process.env.BENCH_WEBHOOKS_ROLE;
if (role === 'receiver') await receiverMain();
else if (role === 'client') await clientMain();
else {
  try {
    await runnerMain();
  } catch (err) {
    console.error((err as Error).stack ?? err);
    process.exitCode = 1;
  }
}
