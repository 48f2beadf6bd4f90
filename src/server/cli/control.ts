// The command channel of a running `aula serve` on the embedded database.
//
// PGlite is one Postgres session. The server's socket (PGLiteSocketServer) can be opened to more
// clients, but it interleaves their protocol messages one by one, so a second client's query lands
// between another's Parse, Bind and Execute ("portal \"\" does not exist") and inside its implicit
// transaction. And a second client could not tell the server's caches that a key was revoked: without
// Redis the bus is in the server's process. So the CLI does not connect to the database; it hands the
// command to the server, which runs it on its own connection and its own bus, exactly as its HTTP
// requests run.
//
// The server listens on 127.0.0.1 (a random port) and writes `{ pid, port, token }` to
// `<AULA_DATA_DIR>/control.json` (mode 0600, beside `pgdata.lock`); a request must carry the token, so
// only who can read the data folder (who could open the database anyway) can send commands. One JSON
// line each way: `{ token, op, args }`, then `{ ok: true, result }` or `{ ok: false, error: { exitCode, message } }`.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { DatabaseInUseError, embeddedDatabaseOwner } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/logger.ts';

export const CONTROL_FILE = 'control.json';
const MAX_LINE = 1 << 20;
/** How long a connection may take to send its request. */
const REQUEST_TIMEOUT_MS = 10_000;
/** How long the CLI waits for a server that holds the database but has not opened its channel yet (it is starting). */
const STARTING_WAIT_MS = 60_000;

/** A failure the command reports (`aula: <message>`) with its exit code: 1 for an unknown id or organization. */
export class CommandFailure extends Error {
  override name = 'CommandFailure';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** The process that held the embedded database let it go while the CLI was looking for it: look again. */
export class OwnerGone extends Error {
  override name = 'OwnerGone';
}

interface ControlFile {
  pid: number;
  port: number;
  token: string;
}

type Response = { ok: true; result: unknown } | { ok: false; error: { exitCode: number; message: string } };

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Opens the channel of a running node and writes its address into the data folder. `handle` runs one
 * operation; a CommandFailure it throws is the CLI's message and exit code, anything else is logged here.
 */
export async function startControl(opts: { dataDir: string; log: Logger; handle: (op: string, args: unknown) => Promise<unknown> }): Promise<{ close(): Promise<void> }> {
  const { dataDir, log, handle } = opts;
  const token = randomBytes(32).toString('base64url');
  const expected = digest(token);
  const sockets = new Set<Socket>();
  const idle = new Set<Socket>(); // connected, request not read yet
  const running = new Set<Promise<void>>();

  const serve = async (socket: Socket, line: string) => {
    let res: Response;
    let op = '?';
    try {
      const req = JSON.parse(line) as { token?: unknown; op?: unknown; args?: unknown };
      if (typeof req.token !== 'string' || !timingSafeEqual(digest(req.token), expected)) {
        log.warn({ remote: socket.remotePort }, 'command channel: a request with a wrong token');
        res = { ok: false, error: { exitCode: 75, message: 'the server refused the command: wrong token (is control.json from another server?)' } };
      } else {
        op = String(req.op);
        const started = performance.now();
        res = { ok: true, result: await handle(op, req.args ?? {}) };
        log.info({ op, ms: Math.round(performance.now() - started) }, 'aula CLI command run');
      }
    } catch (err) {
      if (err instanceof CommandFailure) res = { ok: false, error: { exitCode: err.exitCode, message: err.message } };
      else {
        log.error({ err, op }, 'aula CLI command failed');
        res = { ok: false, error: { exitCode: 1, message: `the server could not run the command: ${(err as Error).message}` } };
      }
    }
    socket.end(JSON.stringify(res) + '\n');
  };

  const server = createServer((socket) => {
    sockets.add(socket);
    idle.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      idle.delete(socket);
    });
    socket.on('error', () => {});
    socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy());
    let buf = '';
    socket.setEncoding('utf8');
    const onData = (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) {
        if (buf.length > MAX_LINE) socket.destroy();
        return;
      }
      socket.off('data', onData);
      idle.delete(socket);
      socket.setTimeout(0); // an operation may take its time (migrations, argon2)
      const p = serve(socket, buf.slice(0, nl)).finally(() => running.delete(p));
      running.add(p);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  server.unref();
  const port = (server.address() as AddressInfo).port;
  const file = join(dataDir, CONTROL_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ pid: process.pid, port, token } satisfies ControlFile) + '\n', { mode: 0o600 });
  renameSync(tmp, file); // readers never see half a file
  log.info({ port, file }, 'aula commands accepted: the CLI runs them here while this node holds the embedded database');

  let closed: Promise<void> | null = null;
  return {
    close: () =>
      (closed ??= (async () => {
        if (readControlFile(dataDir)?.pid === process.pid) rmSync(file, { force: true });
        // commands under way finish and answer; connections that have not sent one are dropped
        const done = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const s of idle) s.destroy();
        await Promise.allSettled([...running]);
        for (const s of sockets) s.destroySoon(); // answered: a client that keeps its end open does not hold the shutdown
        await done;
      })()),
  };
}

function readControlFile(dataDir: string): ControlFile | null {
  try {
    const f = JSON.parse(readFileSync(join(dataDir, CONTROL_FILE), 'utf8')) as ControlFile;
    return typeof f.pid === 'number' && typeof f.port === 'number' && typeof f.token === 'string' ? f : null;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends an operation to the `aula serve` (process `owner`) that holds the embedded database in
 * `dataDir`, and returns its result. Waits for a server still starting to open its channel; throws
 * OwnerGone when the process lets the database go meanwhile, CommandFailure with the server's exit
 * code when the operation fails, DatabaseInUseError (75) when the server does not answer.
 */
export async function sendToServer(dataDir: string, owner: number, op: string, args: unknown): Promise<unknown> {
  const started = performance.now();
  let said = false;
  let ctl: ControlFile | null;
  for (;;) {
    ctl = readControlFile(dataDir);
    if (ctl?.pid === owner) break;
    if (embeddedDatabaseOwner(dataDir) !== owner) throw new OwnerGone();
    const waited = performance.now() - started;
    if (waited > STARTING_WAIT_MS) {
      throw new DatabaseInUseError(
        `the embedded database in ${dataDir} is in use by process ${owner}, which takes no commands (an aula serve still starting, or an older aula); stop it, or set AULA_DATABASE_URL to share a Postgres server`,
      );
    }
    if (!said && waited > 1500) {
      said = true;
      process.stderr.write(`aula: waiting for the server (process ${owner}) to finish starting…\n`);
    }
    await sleep(100);
  }
  let res: Response;
  try {
    res = JSON.parse(await exchange(ctl.port, JSON.stringify({ token: ctl.token, op, args }))) as Response;
  } catch (err) {
    if (embeddedDatabaseOwner(dataDir) !== owner) throw new OwnerGone();
    throw new DatabaseInUseError(
      `the embedded database in ${dataDir} is in use by process ${owner}, which did not answer on 127.0.0.1:${ctl.port} (${(err as Error).message}); try again, or stop it`,
    );
  }
  if (!res.ok) throw new CommandFailure(res.error.message, res.error.exitCode);
  return res.result;
}

/** One request line out, the whole answer back. */
function exchange(port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let buf = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(line + '\n'));
    socket.on('data', (d: string) => (buf += d));
    socket.on('error', reject);
    socket.on('end', () => (buf.endsWith('\n') ? resolve(buf) : reject(new Error('the connection closed before the answer'))));
  });
}
