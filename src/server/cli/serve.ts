// `aula serve [--workers N]`: one node in this process, or a primary that runs N node processes
// on one port (SO_REUSEPORT, which uWS sets on Linux) and keeps them running.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { loadConfig, type Config } from '../../platform/config.ts';
import { createLogger, type Logger } from '../../platform/logger.ts';
import { startNode } from '../node.ts';
import { startControl } from './control.ts';
import { executeOp, nodeContext } from './ops.ts';

/** Exit code of a configuration the command refuses (sysexits EX_CONFIG), as for a bad AULA_ variable. */
export const EX_CONFIG = 78;

/** Restart backoff of a worker that died: doubles per quick death, capped; reset once a worker has run this long. */
const RESTART_MIN_MS = 250;
const RESTART_MAX_MS = 10_000;
const HEALTHY_AFTER_MS = 10_000;
/** A worker still draining this long after the signal is killed (its own drain gives up at 30 s). */
const SHUTDOWN_KILL_MS = 45_000;

/** Messages a worker sends its primary over the IPC channel. */
type WorkerMessage = { type: 'listening'; port: number; nodeId: string };

/**
 * Runs one node in this process until SIGTERM or SIGINT, which drain it (its shards are handed
 * over) and exit. Started by a primary (`AULA_WORKER` set, an IPC channel open), it also drains and
 * exits when the primary goes away, so a killed primary leaves no orphans behind, and it ignores the
 * second copy of a signal (a terminal's Ctrl-C reaches the whole process group, and the primary
 * forwards it too).
 */
export async function serveNode(): Promise<void> {
  const config = loadConfig();
  const worker = process.env.AULA_WORKER ? Number(process.env.AULA_WORKER) : null;
  const logger = createLogger(config, worker ? { worker } : {});
  const node = await startNode({ config, logger });
  // Holding the embedded database (PGlite, one session), this process runs the CLI's commands for it (control.ts).
  const ctx = nodeContext(node.app);
  const control = node.app.database.embedded
    ? await startControl({ dataDir: config.AULA_DATA_DIR, log: logger, handle: (op, args) => executeOp(ctx, op, args) })
    : null;
  let stopping = false;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'aula node stopping');
    Promise.resolve(control?.close())
      .then(() => node.close())
      .then(
        () => process.exit(0),
        (err) => {
          logger.error({ err }, 'aula node did not close cleanly');
          process.exit(1);
        },
      );
  };
  if (process.send && process.channel) {
    const msg: WorkerMessage = { type: 'listening', port: node.port, nodeId: node.app.cluster.nodeId };
    process.send(msg);
    process.channel.unref();
    process.once('disconnect', () => stop('the primary went away'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  } else {
    // standalone: a second signal during the drain gets the default action (exit at once)
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  }
}

/** A free TCP port on `host`, so that every worker is given the same one. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('could not pick a port'))));
    });
  });
}

interface Slot {
  index: number;
  child: ChildProcess | null;
  startedAt: number;
  failures: number;
  restart: NodeJS.Timeout | null;
}

/**
 * The primary of `aula serve --workers N`: starts N nodes on one port, forwards SIGTERM/SIGINT to
 * them and waits for their drains, restarts one that dies unexpectedly (with backoff, never during
 * shutdown). Resolves with the exit code once every worker has exited. Refuses (78) without
 * AULA_REDIS_URL and AULA_DATABASE_URL: the embedded database and the in-process cluster are one process's.
 */
export async function serveWorkers(n: number): Promise<number> {
  const config = loadConfig();
  if (!config.AULA_REDIS_URL || !config.AULA_DATABASE_URL) {
    const missing = [!config.AULA_DATABASE_URL && 'AULA_DATABASE_URL', !config.AULA_REDIS_URL && 'AULA_REDIS_URL'].filter(Boolean).join(' and ');
    process.stderr.write(
      `aula: serve --workers ${n} needs AULA_DATABASE_URL and AULA_REDIS_URL (${missing} unset): ` +
        'the embedded database and the in-process cluster belong to one process. Set both, or run one worker.\n',
    );
    return EX_CONFIG;
  }
  const log = createLogger(config, { role: 'primary' });
  const port = config.AULA_PORT || (await freePort(config.AULA_HOST));
  return new Supervisor(config, log, n, port).run();
}

class Supervisor {
  readonly #log: Logger;
  readonly #port: number;
  readonly #slots: Slot[];
  readonly #listening = new Set<number>();
  #shuttingDown = false;
  #failed = false;
  #done: (code: number) => void = () => {};

  constructor(config: Config, log: Logger, n: number, port: number) {
    this.#log = log;
    this.#port = port;
    this.#slots = Array.from({ length: n }, (_, i) => ({ index: i + 1, child: null, startedAt: 0, failures: 0, restart: null }));
    log.info({ workers: n, port, host: config.AULA_HOST }, 'aula primary starting workers');
  }

  run(): Promise<number> {
    const done = new Promise<number>((resolve) => (this.#done = resolve));
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals++;
      if (signals === 1) this.#shutdown(signal);
      else {
        this.#log.warn({ signal }, 'second signal: killing the workers');
        this.#signalAll('SIGKILL');
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    for (const slot of this.#slots) this.#start(slot);
    return done;
  }

  #start(slot: Slot): void {
    slot.restart = null;
    // The same entry point and loader flags as this process (bin/aula.js, or node --import tsx src/server/cli/main.ts).
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'serve'], {
      env: { ...process.env, AULA_PORT: String(this.#port), AULA_WORKER: String(slot.index) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    slot.child = child;
    slot.startedAt = performance.now();
    child.on('message', (m: WorkerMessage) => {
      if (m?.type !== 'listening') return;
      this.#listening.add(slot.index);
      if (this.#listening.size === this.#slots.length && !this.#shuttingDown) {
        this.#log.info({ workers: this.#slots.length, port: this.#port }, 'aula workers listening');
      }
    });
    child.on('error', (err) => this.#log.error({ err, worker: slot.index }, 'could not start a worker'));
    child.once('exit', (code, signal) => this.#exited(slot, child, code, signal));
  }

  #exited(slot: Slot, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (slot.child !== child) return;
    slot.child = null;
    this.#listening.delete(slot.index);
    if (this.#shuttingDown) {
      if (code !== 0) this.#failed = true;
      this.#log.info({ worker: slot.index, workerPid: child.pid, code, signal }, 'worker exited');
      this.#maybeDone();
      return;
    }
    const ranMs = performance.now() - slot.startedAt;
    slot.failures = ranMs >= HEALTHY_AFTER_MS ? 0 : slot.failures + 1;
    const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** Math.max(0, slot.failures - 1));
    this.#log.warn({ worker: slot.index, workerPid: child.pid, code, signal, ranMs: Math.round(ranMs), restartInMs: delay }, 'worker exited unexpectedly; restarting it');
    slot.restart = setTimeout(() => this.#start(slot), delay);
  }

  #shutdown(signal: NodeJS.Signals): void {
    this.#shuttingDown = true;
    this.#log.info({ signal }, 'aula primary stopping: the workers drain');
    for (const slot of this.#slots) {
      if (slot.restart) clearTimeout(slot.restart);
      slot.restart = null;
    }
    this.#signalAll(signal);
    setTimeout(() => {
      this.#log.warn('workers still running after the drain deadline: killing them');
      this.#failed = true;
      this.#signalAll('SIGKILL');
    }, SHUTDOWN_KILL_MS).unref();
    this.#maybeDone();
  }

  #signalAll(signal: NodeJS.Signals): void {
    for (const slot of this.#slots) {
      if (slot.child && slot.child.exitCode === null && slot.child.signalCode === null) slot.child.kill(signal);
    }
  }

  #maybeDone(): void {
    if (this.#slots.some((s) => s.child)) return;
    this.#log.info('aula primary stopped');
    this.#done(this.#failed ? 1 : 0);
  }
}
