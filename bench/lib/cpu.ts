import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time from /proc, to tell which side of a run was saturated: each core's busy share, and the CPU
 * the server, Redis and Postgres used. Linux only; elsewhere every figure is null.
 */
export interface CpuSnapshot {
  at: number;
  cores: { busy: number; total: number }[];
  /** clock ticks (user + system) by group */
  groups: Record<string, number>;
}

export interface CpuUsage {
  /** busy share of each core, 0..1 */
  cores: number[];
  /** CPU seconds per wall second (1 = one full core) by group */
  groups: Record<string, number>;
  /** everything else the machine ran meanwhile, in cores: other sessions, builds, the runner itself */
  other: number;
}

const TICKS_PER_SECOND = 100; // USER_HZ; 100 on every Linux configuration that matters here

function procTicks(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

function commOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Server pids by name; Redis and Postgres are found by process name (every Postgres backend counts). */
export function snapshot(named: Record<string, number>): CpuSnapshot | null {
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  const cores = stat
    .split('\n')
    .filter((l) => /^cpu\d+ /.test(l))
    .map((l) => {
      const v = l.split(/\s+/).slice(1, 9).map(Number);
      const total = v.reduce((a, b) => a + b, 0);
      return { busy: total - v[3]! - v[4]!, total };
    });
  const groups: Record<string, number> = { redis: 0, postgres: 0 };
  for (const [name, pid] of Object.entries(named)) groups[name] = procTicks(pid);
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    const comm = commOf(pid);
    if (comm.startsWith('redis-server')) groups.redis! += procTicks(pid);
    else if (comm === 'postgres' || comm.startsWith('postgres:')) groups.postgres! += procTicks(pid);
  }
  return { at: performance.now(), cores, groups };
}

export function usage(a: CpuSnapshot | null, b: CpuSnapshot | null): CpuUsage | null {
  if (!a || !b) return null;
  const wall = (b.at - a.at) / 1000;
  const cores = b.cores.map((c, i) => {
    const t = c.total - (a.cores[i]?.total ?? 0);
    return t > 0 ? (c.busy - (a.cores[i]?.busy ?? 0)) / t : 0;
  });
  const groups: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.groups)) groups[k] = Math.max(0, v - (a.groups[k] ?? 0)) / TICKS_PER_SECOND / wall;
  const busy = cores.reduce((x, y) => x + y, 0);
  const known = Object.values(groups).reduce((x, y) => x + y, 0);
  return { cores, groups, other: Math.max(0, busy - known) };
}
