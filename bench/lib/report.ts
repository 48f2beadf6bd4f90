import type { CpuUsage } from './cpu.ts';
import type { WrkResult } from './wrk.ts';

/** One measured wrk run against one server. */
export interface Run {
  scenario: string;
  round: number;
  rps: number;
  non2xx: number;
  socketErrors: number;
  serverLogLines: number;
  cpu: CpuUsage | null;
  warmup: WrkResult | null;
  result: WrkResult;
  /** errors: the run is not a valid measurement */
  flags: string[];
  /** valid but to be read with care: a busy machine, server warnings */
  notes: string[];
}

/** One scenario over all rounds: medians, summed errors, ratios to the baselines of the same run. */
export interface Row {
  scenario: string;
  rps: number;
  p50Us: number;
  p99Us: number;
  non2xx: number;
  socketErrors: number;
  /** cores (CPU seconds per second) */
  serverCpu: number | null;
  wrkCpu: number | null;
  redisCpu: number | null;
  postgresCpu: number | null;
  otherCpu: number | null;
  /** server CPU time per request, µs: what sets the rate on a quiet core the server has to itself */
  serverUsPerRequest: number | null;
  flagged: boolean;
  noisy: boolean;
  ratioToHelloGet: number;
  ratioToHelloPost: number;
  /** hello GET's µs/req over this row's */
  cpuRatioToHelloGet: number | null;
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export function summarize(scenarios: string[], runs: Run[], noisyCores: number): Row[] {
  const rows = scenarios.map((scenario): Row => {
    const rs = runs.filter((r) => r.scenario === scenario);
    const withCpu = rs.every((r) => r.cpu);
    const cpuOf = (k: string) => (withCpu ? median(rs.map((r) => r.cpu!.groups[k] ?? 0)) : null);
    return {
      scenario,
      rps: median(rs.map((r) => r.rps)),
      p50Us: median(rs.map((r) => r.result.latencyUs.p50)),
      p99Us: median(rs.map((r) => r.result.latencyUs.p99)),
      non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
      socketErrors: rs.reduce((n, r) => n + r.socketErrors, 0),
      serverCpu: cpuOf('server'),
      wrkCpu: cpuOf('wrk'),
      redisCpu: cpuOf('redis'),
      postgresCpu: cpuOf('postgres'),
      otherCpu: withCpu ? median(rs.map((r) => r.cpu!.other)) : null,
      serverUsPerRequest: withCpu && rs.every((r) => r.cpu!.groups.server !== undefined) ? median(rs.map((r) => (r.cpu!.groups.server! * 1e6) / r.rps)) : null,
      flagged: rs.some((r) => r.flags.length > 0),
      noisy: rs.some((r) => (r.cpu?.other ?? 0) > noisyCores),
      ratioToHelloGet: 0,
      ratioToHelloPost: 0,
      cpuRatioToHelloGet: null,
    };
  });
  const get = rows.find((r) => r.scenario === 'hello-get')!;
  const post = rows.find((r) => r.scenario === 'hello-post')!;
  for (const r of rows) {
    r.ratioToHelloGet = r.rps / get.rps;
    r.ratioToHelloPost = r.rps / post.rps;
    r.cpuRatioToHelloGet = get.serverUsPerRequest && r.serverUsPerRequest ? get.serverUsPerRequest / r.serverUsPerRequest : null;
  }
  return rows;
}

/** Each Aula run against the hello GET of its own round. */
export function ratiosPerRound(runs: Run[]): { scenario: string; round: number; ratioToHelloGet: number }[] {
  return runs
    .filter((r) => !r.scenario.startsWith('hello'))
    .map((r) => ({ scenario: r.scenario, round: r.round, ratioToHelloGet: r.rps / runs.find((h) => h.round === r.round && h.scenario === 'hello-get')!.rps }));
}

export const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US');
export const ms = (us: number): string => (us >= 10_000 ? `${(us / 1000).toFixed(0)} ms` : `${(us / 1000).toFixed(2)} ms`);
export const pct = (x: number | null): string => (x === null ? '-' : `${(x * 100).toFixed(0)}%`);

export function printTable(rows: Row[]): void {
  const head = ['scenario', 'req/s', 'p50', 'p99', 'non-2xx', 'sock err', 'server CPU', 'other CPU', 'CPU µs/req', 'vs hello GET', 'vs hello POST', 'CPU vs GET'];
  const body = rows.map((r) => [
    r.scenario + (r.flagged ? ' (!)' : r.noisy ? ' (~)' : ''),
    fmtInt(r.rps),
    ms(r.p50Us),
    ms(r.p99Us),
    String(r.non2xx),
    String(r.socketErrors),
    pct(r.serverCpu),
    pct(r.otherCpu),
    r.serverUsPerRequest === null ? '-' : r.serverUsPerRequest.toFixed(1),
    r.ratioToHelloGet.toFixed(3),
    r.ratioToHelloPost.toFixed(3),
    r.cpuRatioToHelloGet === null ? '-' : r.cpuRatioToHelloGet.toFixed(3),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log('\n' + line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
  console.log('(!) a run had errors: not a valid measurement; (~) the machine was busy with other work: noisy');
  console.log("CPU µs/req: the server's CPU time per request; CPU vs GET: hello GET's µs/req over the row's, the ratio a quiet core would show\n");
}
