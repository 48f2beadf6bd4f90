import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import postgres from 'postgres';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

export type Sql = postgres.Sql<Record<string, never>>;
export type Tx = postgres.TransactionSql<Record<string, never>>;
/** Either the pool or a transaction: services take this so callers choose the transaction boundary. */
export type Db = Sql | Tx;

export interface Database {
  sql: Sql;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * Column names are camelCased, and only column names: `postgres.camel` also rewrites the keys inside
 * json values, which would corrupt snapshots keyed by ids and caller-supplied JSON.
 */
export const pgOptions = {
  transform: { column: { from: postgres.toCamel, to: postgres.fromCamel } },
  onnotice: () => {},
  /**
   * Seconds before a connection that closed with an error connects again; a query given to it waits that
   * long. postgres.js's default grows to 20 s after a few refused connects, so while the database is
   * down (a restart) requests hung for many seconds instead of being refused fast with a 503; capped
   * here at a quarter of a second, which still keeps a pool from hammering a server that is down.
   */
  backoff: (retries: number) => Math.min(0.02 * 2 ** retries, 0.25),
};

/**
 * Connects to AULA_DATABASE_URL, or, when it is unset, starts the embedded default: PGlite with its
 * data in AULA_DATA_DIR, served over its socket server so the same postgres.js code runs on it.
 */
export async function openDatabase(config: Config, log: Logger): Promise<Database> {
  if (config.AULA_DATABASE_URL) {
    const sql = postgres(config.AULA_DATABASE_URL, { ...pgOptions, max: config.AULA_DATABASE_POOL }) as unknown as Sql;
    return { sql, embedded: false, close: () => sql.end({ timeout: 5 }) };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const { NodeFS } = await import('@electric-sql/pglite/nodefs');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  const dataDir = config.AULA_DATA_DIR;
  const dir = join(dataDir, 'pgdata');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const release = lockDataDir(dataDir);
  let socket: SocketPlace | null = null;
  try {
    const tightened = tighten(dataDir);
    if (tightened.dirs || tightened.files) {
      log.warn(
        { dir: dataDir, dirs: tightened.dirs, files: tightened.files },
        `the embedded database's folder was open to other users of this machine: tightened ${tightened.dirs} directories to 0700 and ${tightened.files} files to 0600`,
      );
    }
    mkdirSync(dir, { mode: 0o700, recursive: true });
    clearStaleSocket(dataDir);
    socket = placeSocket(dataDir);
    const db = await PGlite.create({ fs: ownerOnly(NodeFS, dir) });
    const server = new PGLiteSocketServer({ db, path: socket.path });
    await server.start();
    // Node makes the socket 0777 minus the umask; connecting needs write access to it.
    chmodSync(socket.path, 0o600);
    const place = socket;
    log.info({ dir, conn: place.path }, 'embedded database started (PGlite)');
    const sql = postgres(embeddedPgOptions(place.path)) as unknown as Sql;
    let closed: Promise<void> | null = null;
    return {
      sql,
      embedded: true,
      close: () =>
        (closed ??= (async () => {
          await sql.end({ timeout: 5 });
          await server.stop();
          await db.close();
          place.remove();
          release();
        })()),
    };
  } catch (err) {
    socket?.remove();
    release();
    throw err;
  }
}

/**
 * The embedded connection: PGlite's one session over its socket, for the life of the server. One
 * connection, so transactions cannot interleave inside that one session (DESIGN.md). postgres.js
 * would otherwise end a connection after 30 to 60 minutes (max_lifetime) or when idle (PGIDLE_TIMEOUT,
 * PGMAX_LIFETIME in the environment), and each end is a moment with the socket server's one slot free and
 * the server's queries waiting for a new connection. Set here, not left to defaults, so the environment
 * cannot turn recycling on.
 */
export function embeddedPgOptions(socketPath: string) {
  return { ...pgOptions, path: socketPath, user: 'postgres', database: 'postgres', max: 1, max_lifetime: null, idle_timeout: 0 };
}

type NodeFSClass = typeof import('@electric-sql/pglite/nodefs').NodeFS;
interface ModeFS {
  mknod(path: string, mode: number, dev: number): unknown;
  chmod(path: unknown, mode: number, dontFollow?: boolean): unknown;
}

/**
 * PGlite's NODEFS writes the files of a new database with mode 0666 by an explicit chmod (the umask
 * does not apply), its directories 0777 minus the umask, and the files Postgres makes itself minus its own
 * umask 022. Every mode PGlite sets on the disk goes through its FS's mknod or chmod: clearing group and
 * other bits there makes each file 0600 and each directory 0700 as it is made, under any umask.
 */
function ownerOnly(NodeFS: NodeFSClass, dir: string): InstanceType<NodeFSClass> {
  class OwnerOnlyFS extends NodeFS {
    override async init(...args: Parameters<InstanceType<NodeFSClass>['init']>) {
      const out = await super.init(...args);
      const opts = out.emscriptenOpts;
      opts.preRun = [
        (mod) => {
          const fs = mod.FS as unknown as ModeFS;
          const { mknod, chmod } = fs;
          fs.mknod = (path, mode, dev) => mknod.call(fs, path, mode & ~0o077, dev);
          fs.chmod = (path, mode, dontFollow) => chmod.call(fs, path, mode & ~0o077, dontFollow);
        },
        ...(opts.preRun ?? []),
      ];
      return out;
    }
  }
  return new OwnerOnlyFS(dir);
}

/** What Aula keeps in the data folder, beside anything else an operator may have put there. */
const OWN_ENTRIES = ['pgdata', 'pgdata.lock', 'pgdata.sock', 'pgdata.sock.path', 'control.json', 'secret.key'];

/**
 * Takes group and other access off the data folder and what Aula keeps in it (recursively: directories
 * 0700, files 0600), as an older Aula or a umask of 0 left them. Symbolic links are not followed. Counts
 * what it changed.
 */
function tighten(dataDir: string): { dirs: number; files: number } {
  const changed = { dirs: 0, files: 0 };
  const fix = (path: string, st: Stats) => {
    if (st.isSymbolicLink() || !(st.mode & 0o077)) return;
    chmodSync(path, st.isDirectory() ? 0o700 : 0o600);
    if (st.isDirectory()) changed.dirs++;
    else changed.files++;
  };
  const walk = (path: string) => {
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st) return;
    fix(path, st);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  fix(dataDir, statSync(dataDir)); // the folder itself, through a link if it is one
  for (const name of OWN_ENTRIES) walk(join(dataDir, name));
  return changed;
}

/** Linux's sun_path holds 108 bytes with the closing NUL (macOS's 104). */
const MAX_SOCKET_PATH = process.platform === 'darwin' ? 103 : 107;
const SOCKET = 'pgdata.sock';
/** Names the socket when it cannot be in the data folder. */
const SOCKET_POINTER = 'pgdata.sock.path';
const TEMP_PREFIX = 'aula-pg-';

interface SocketPlace {
  path: string;
  remove(): void;
}

/**
 * Where PGlite's socket listens: in the data folder, whose mode keeps every other user out. A folder
 * too deep for a socket path gets a private directory (0700, mkdtemp) under the system's temp
 * directory, named in `pgdata.sock.path` in the data folder for operators and the CLI.
 */
function placeSocket(dataDir: string): SocketPlace {
  const inside = join(resolve(dataDir), SOCKET);
  if (Buffer.byteLength(inside) <= MAX_SOCKET_PATH) return { path: inside, remove: () => rmSync(inside, { force: true }) };
  const dir = mkdtempSync(join(tmpdir(), TEMP_PREFIX));
  const path = join(dir, SOCKET);
  const pointer = join(dataDir, SOCKET_POINTER);
  const remove = () => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(pointer, { force: true });
  };
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    remove();
    throw new Error(`the embedded database's socket cannot be placed: ${inside} and ${path} are both longer than ${MAX_SOCKET_PATH} bytes; use a shorter AULA_DATA_DIR or TMPDIR`);
  }
  writeFileSync(pointer, `${path}\n`, { mode: 0o600 });
  return { path, remove };
}

/**
 * A server that died (SIGKILL, a crash) leaves its socket, or its temp directory and the file naming it:
 * the socket would refuse to listen again, the directory would stay forever. Called holding the lock,
 * so their owner is gone. Only a directory of ours (`aula-pg-*` right under the temp directory) is removed.
 */
function clearStaleSocket(dataDir: string): void {
  rmSync(join(dataDir, SOCKET), { force: true });
  const pointer = join(dataDir, SOCKET_POINTER);
  let named: string;
  try {
    named = readFileSync(pointer, 'utf8').trim();
  } catch {
    return;
  }
  const dir = dirname(named);
  if (dirname(dir) === tmpdir() && basename(dir).startsWith(TEMP_PREFIX)) rmSync(dir, { recursive: true, force: true });
  rmSync(pointer, { force: true });
}

export class DatabaseInUseError extends Error {
  override name = 'DatabaseInUseError';
}

/**
 * PGlite is one process's database: a second process opening the same folder would see stale data and
 * could corrupt it. A lock file with the owner's pid keeps it to one; a lock left by a dead process is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, 'pgdata.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (pid && pid !== process.pid && isAlive(pid)) {
        throw new DatabaseInUseError(
          `the embedded database in ${dataDir} is in use by process ${pid}; stop it first, or set AULA_DATABASE_URL to share a Postgres server`,
        );
      }
      rmSync(file, { force: true });
    }
  }
  throw new DatabaseInUseError(`could not lock the embedded database in ${dataDir}`);
}

/**
 * The pid of another live process that holds the embedded database in `dataDir` (a running `aula serve`),
 * or null when nobody does. The CLI then sends its commands to that process (src/cli/control.ts).
 */
export function embeddedDatabaseOwner(dataDir: string): number | null {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dataDir, 'pgdata.lock'), 'utf8').trim());
  } catch {
    return null;
  }
  return pid && pid !== process.pid && isAlive(pid) ? pid : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
