import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCENARIOS = new URL('../scenarios/', import.meta.url);

export interface WrkResult {
  requests: number;
  durationUs: number;
  bytes: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latencyUs: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** responses by HTTP status */
  statuses: Record<string, number>;
  issued: number;
  nextIndex: number;
  wrapped: boolean;
}

export interface WrkRun {
  url: string;
  /** scenarios/<script>.lua, run with scenarios/common.lua in front of it */
  script: string;
  args: string[];
  seconds: number;
  connections: number;
  threads: number;
  core: number | null;
  /**
   * Called with wrk's pid when wrk says it is running: every thread has run its Lua init and the clock
   * has started. taskset and stdbuf exec, so the pid is wrk's own.
   */
  onStart?: (pid: number) => void;
}

/** wrk's version line, or null when wrk is not installed. */
export function wrkVersion(): string | null {
  try {
    // `wrk -v` prints the version line and the usage, and exits 1
    execFileSync('wrk', ['-v'], { stdio: 'pipe' });
    return 'wrk';
  } catch (err) {
    const e = err as { code?: string; stdout?: Buffer; stderr?: Buffer };
    if (e.code === 'ENOENT') return null;
    const text = `${e.stdout ?? ''}${e.stderr ?? ''}`;
    return text.split('\n')[0]?.trim() || 'wrk';
  }
}

let stdbuf: boolean | undefined;
function hasStdbuf(): boolean {
  if (stdbuf === undefined) {
    try {
      execFileSync('stdbuf', ['-oL', 'true'], { stdio: 'ignore' });
      stdbuf = true;
    } catch {
      stdbuf = false;
    }
  }
  return stdbuf;
}

export function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function runWrk(run: WrkRun): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'aula-wrk-'));
  try {
    const file = join(dir, `${run.script}.lua`);
    writeFileSync(file, readFileSync(new URL('common.lua', SCENARIOS), 'utf8') + '\n' + readFileSync(new URL(`${run.script}.lua`, SCENARIOS), 'utf8'));
    const wrk = [
      'wrk',
      `-t${run.threads}`,
      `-c${run.connections}`,
      `-d${run.seconds}s`,
      '--timeout',
      '10s',
      '-s',
      file,
      run.url,
      ...(run.args.length ? ['--', ...run.args] : []),
    ];
    // line-buffered, so "Running ..." arrives when wrk prints it, not at exit
    const lined = hasStdbuf() ? ['stdbuf', '-oL', ...wrk] : wrk;
    const [cmd, ...args] = run.core === null ? lined : ['taskset', '-c', String(run.core), ...lined];
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let started = false;
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      if (!started && out.includes('Running ')) {
        started = true;
        run.onStart?.(child.pid!);
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '));
    if (code !== 0 || !line) throw new Error(`wrk exited with ${code}:\n${out}\n${err}`);
    return JSON.parse(line.slice('WRK_JSON '.length)) as WrkResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
