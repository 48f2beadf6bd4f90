import { hostname } from 'node:os';
import { iso, type Clock } from '../core/clock.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { afterCommit, savepoint, transaction } from '../platform/db/tx.ts';
import { AppError } from '../core/errors.ts';
import { toAppError } from '../platform/to-app-error.ts';
import { newId } from '../platform/ids.ts';
import type { Logger } from '../platform/logger.ts';
import type { UserInput, Users } from './users.ts';

export const BULK_MAX_USERS = 1000;
const CHUNK = 100;
const LEASE_MS = 30_000;

export const JOB_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED'] as const;

/** One item of a bulk job that was not applied, and why. */
export interface JobFailure {
  /** Position in the request's users array. */
  index: number;
  externalId: string | null;
  error: { code: string; message: string; details: Record<string, unknown> };
}

/** What a job does: a bulk import of users, or a recording's composition (src/services/recordings.ts). */
export type JobKind = 'users.bulk_upsert' | 'recording.compose' | 'recording.notes';

/** A job of a kind the runner hands to its owner: done when it returns, retried when it throws (on another claim). */
export type JobHandler = (input: Record<string, unknown>, signal: AbortSignal) => Promise<void>;

/** Thrown by a handed-over job that cannot succeed however often it is tried: it is FAILED at once. */
export class PermanentJobError extends Error {
  override name = 'PermanentJobError';
}

/** A handed-over job is tried this many times; then `gaveUp` is told and it is FAILED. */
const MAX_ATTEMPTS = 5;

/** A background job as the API shows it. */
export interface JobRecord {
  id: string;
  kind: JobKind;
  status: (typeof JOB_STATUSES)[number];
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  failures: JobFailure[];
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Why a job FAILED (or why its last attempt did, while it is tried again). */
  error: string | null;
}

/** Checks one item of a bulk upsert as POST /public/users would, or throws its validation_failed. */
export type UserItemParser = (raw: unknown) => UserInput;

export interface JobRow {
  id: string;
  orgId: string;
  kind: JobKind;
  status: (typeof JOB_STATUSES)[number];
  input: { users: unknown[] } & Record<string, unknown>;
  attempts: number;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  failures: JobFailure[];
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  error: string | null;
}

export const toJobRecord = (j: JobRow): JobRecord => ({
  id: j.id,
  kind: j.kind,
  status: j.status,
  total: j.total,
  processed: j.processed,
  succeeded: j.succeeded,
  failed: j.failed,
  failures: j.failures,
  createdAt: j.createdAt.toISOString(),
  startedAt: j.startedAt?.toISOString() ?? null,
  finishedAt: j.finishedAt?.toISOString() ?? null,
  error: j.kind === 'users.bulk_upsert' ? null : j.error,
});

/**
 * Durable background jobs. A job is a row; a node claims it with a lease, works through it in chunks,
 * and commits each chunk's changes together with the job's progress, so a crash repeats no work and
 * another node resumes once the lease runs out.
 */
export class Jobs {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #bus: Bus;
  readonly #users: Users;
  readonly #log: Logger;
  readonly #parseUser: UserItemParser;
  readonly #worker = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  #timer: NodeJS.Timeout | null = null;
  readonly #handlers = new Map<JobKind, { run: JobHandler; gaveUp: (input: Record<string, unknown>, why: string) => Promise<void> }>();
  readonly #aborts = new Set<AbortController>();
  #running = false;
  #again = false;
  #stopped = false;

  /** Told how each run of a job ended (the metrics' aula_job_runs_total and aula_job_run_seconds). */
  onRun: (kind: JobKind, outcome: 'succeeded' | 'retry' | 'failed', seconds: number) => void = () => {};

  /** `parseUser` checks each item as the API checks one user (its schema belongs to the HTTP layer). */
  constructor(sql: Sql, clock: Clock, bus: Bus, users: Users, log: Logger, parseUser: UserItemParser) {
    this.#parseUser = parseUser;
    this.#sql = sql;
    this.#clock = clock;
    this.#bus = bus;
    this.#users = users;
    this.#log = log;
  }

  async createBulkUsers(db: Db, orgId: string, users: unknown[]): Promise<JobRow> {
    const now = iso(this.#clock.now());
    const [job] = await db<JobRow[]>`insert into jobs (id, org_id, kind, status, input, total, created_at)
      values (${newId('job')}, ${orgId}, 'users.bulk_upsert', 'QUEUED', ${db.json({ users } as never)}, ${users.length}, ${now})
      returning *`;
    afterCommit(db, () => this.#bus.publish('jobs', {}));
    return job!;
  }

  async get(db: Db, orgId: string, id: string): Promise<JobRow> {
    const [job] = await db<JobRow[]>`select * from jobs where id = ${id} and org_id = ${orgId}`;
    if (!job) throw new AppError('job_not_found', { details: { id } });
    return job;
  }

  /** Jobs of this kind are handed to `run` (a recording's composition); `gaveUp` when MAX_ATTEMPTS failed. */
  handle(kind: JobKind, run: JobHandler, gaveUp: (input: Record<string, unknown>, why: string) => Promise<void>): void {
    this.#handlers.set(kind, { run, gaveUp });
  }

  start(pollMs: number): void {
    this.#bus.subscribe('jobs', () => this.kick());
    this.#timer = setInterval(() => this.kick(), pollMs);
    this.#timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const a of this.#aborts) a.abort();
    while (this.#running) await new Promise((r) => setTimeout(r, 10));
  }

  /** Runs claimable jobs until none is left; concurrent kicks coalesce. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void (async () => {
      try {
        do {
          this.#again = false;
          while (!this.#stopped && (await this.#runOne()));
        } while (this.#again && !this.#stopped);
      } catch (err) {
        this.#log.error({ err }, 'job runner failed');
      } finally {
        this.#running = false;
      }
    })();
  }

  async #runOne(): Promise<boolean> {
    const now = this.#clock.now();
    // only kinds this node can run: a node without a transcription engine leaves notes to those with one
    const kinds = ['users.bulk_upsert', ...this.#handlers.keys()];
    const [job] = await this.#sql<JobRow[]>`update jobs set status = 'RUNNING', locked_by = ${this.#worker},
        locked_until = ${iso(now + LEASE_MS)}, attempts = attempts + 1, started_at = coalesce(started_at, ${iso(now)})
      where id = (select id from jobs where (status = 'QUEUED' or (status = 'RUNNING' and locked_until < ${iso(now)}))
          and (not_before is null or not_before <= ${iso(now)}) and kind in ${this.#sql(kinds)}
        order by created_at limit 1 for update skip locked)
      returning *`;
    if (!job) return false;
    const handler = this.#handlers.get(job.kind);
    if (handler) {
      await this.#handOver(job, handler);
      return true;
    }
    this.#log.info({ jobId: job.id, from: job.processed, total: job.total }, 'job claimed');
    const began = performance.now();
    try {
      for (let from = job.processed; from < job.total && !this.#stopped; from += CHUNK) {
        await this.#chunk(job, from, Math.min(from + CHUNK, job.total));
      }
      if (!this.#stopped) {
        await this.#sql`update jobs set status = 'SUCCEEDED', finished_at = ${iso(this.#clock.now())}, locked_by = null, locked_until = null
          where id = ${job.id} and locked_by = ${this.#worker}`;
        this.onRun(job.kind, 'succeeded', (performance.now() - began) / 1000);
      }
    } catch (err) {
      this.onRun(job.kind, 'retry', (performance.now() - began) / 1000);
      this.#log.error({ err, jobId: job.id }, 'job chunk failed; the lease will let it be retried');
    }
    return true;
  }

  /**
   * A job its owner runs whole (a composition of minutes): the lease is renewed while it runs, so no other
   * node takes it; a throw leaves it for a later claim (after a pause), until MAX_ATTEMPTS.
   */
  async #handOver(job: JobRow, h: { run: JobHandler; gaveUp: (input: Record<string, unknown>, why: string) => Promise<void> }): Promise<void> {
    const abort = new AbortController();
    this.#aborts.add(abort);
    const began = performance.now();
    const ran = (outcome: 'succeeded' | 'retry' | 'failed') => this.onRun(job.kind, outcome, (performance.now() - began) / 1000);
    const renew = setInterval(() => {
      void this.#sql`update jobs set locked_until = ${iso(this.#clock.now() + LEASE_MS)} where id = ${job.id} and locked_by = ${this.#worker}`.catch(() => {});
    }, LEASE_MS / 3);
    try {
      await h.run(job.input, abort.signal);
      await this.#sql`update jobs set status = 'SUCCEEDED', processed = 1, succeeded = 1, finished_at = ${iso(this.#clock.now())}, locked_by = null, locked_until = null
        where id = ${job.id} and locked_by = ${this.#worker}`;
      ran('succeeded');
    } catch (err) {
      if (abort.signal.aborted) return; // this node is stopping: another takes it when the lease runs out
      const why = (err as Error).message;
      if (job.attempts >= MAX_ATTEMPTS || err instanceof PermanentJobError) {
        ran('failed');
        await h.gaveUp(job.input, why);
        await this.#sql`update jobs set status = 'FAILED', failed = 1, processed = 1, error = ${why}, finished_at = ${iso(this.#clock.now())}, locked_by = null, locked_until = null
          where id = ${job.id} and locked_by = ${this.#worker}`;
      } else {
        // tried again after a pause that grows with the attempts (the lease's own expiry is the retry)
        await this.#sql`update jobs set status = 'QUEUED', error = ${why}, locked_by = null, locked_until = null,
            not_before = ${iso(this.#clock.now() + 15_000 * 2 ** (job.attempts - 1))} where id = ${job.id} and locked_by = ${this.#worker}`;
        ran('retry');
        this.#log.info({ jobId: job.id, kind: job.kind, attempt: job.attempts, why }, 'job will be tried again');
      }
    } finally {
      clearInterval(renew);
      this.#aborts.delete(abort);
    }
  }

  async #chunk(job: JobRow, from: number, to: number): Promise<void> {
    await transaction(this.#sql, async (tx) => {
      const failures: JobFailure[] = [];
      let ok = 0;
      for (let i = from; i < to; i++) {
        const raw = job.input.users[i];
        const ext = typeof (raw as { externalId?: unknown })?.externalId === 'string' ? (raw as { externalId: string }).externalId : null;
        try {
          const input = this.#parseUser(raw);
          await savepoint(tx, (sp) => this.#users.upsert(sp, job.orgId, input));
          ok++;
        } catch (err) {
          const e = toAppError(err);
          failures.push({ index: i, externalId: ext, error: { code: e.code, message: e.message, details: e.details } });
        }
      }
      const now = this.#clock.now();
      const rows = await tx`update jobs set processed = ${to}, succeeded = succeeded + ${ok}, failed = failed + ${failures.length},
          failures = failures || ${tx.json(failures as never)}, locked_until = ${iso(now + LEASE_MS)}
        where id = ${job.id} and locked_by = ${this.#worker} returning id`;
      if (!rows.length) throw new Error('job lease lost');
    });
  }
}
