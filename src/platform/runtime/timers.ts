import { iso, type Clock } from '../../core/clock.ts';
import type { Cluster } from '../cluster/cluster.ts';
import type { Sql } from '../db/index.ts';
import { AppError } from '../../core/errors.ts';
import type { Logger } from '../logger.ts';

/**
 * Durable timers: rows with absolute due times. Each node looks only at the shards it owns, so after a
 * takeover the new owner fires what the old one armed. Time is the injected clock's; the poll is only
 * how often we look.
 */
export class DurableTimers {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #cluster: Cluster;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | null = null;
  #chain: Promise<void> = Promise.resolve();
  #busy = 0;

  constructor(sql: Sql, clock: Clock, cluster: Cluster, log: Logger) {
    this.#sql = sql;
    this.#clock = clock;
    this.#cluster = cluster;
    this.#log = log;
  }

  start(pollMs = 250): void {
    this.#timer = setInterval(() => {
      // the poll skips a beat while a pass runs; tick() always runs a pass of its own
      if (!this.#busy) void this.tick().catch((err) => this.#log.warn({ err }, 'timer tick failed'));
    }, pollMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * Fires every timer of the owned shards that is due now; returns how many fired. Passes never overlap,
   * and each call gets a pass that starts after it was made, so a pass begun before the clock moved
   * can never stand in for one after.
   */
  tick(): Promise<number> {
    const run = this.#chain.then(() => this.#fire());
    this.#chain = run.then(
      () => undefined,
      () => undefined,
    );
    this.#busy++;
    void this.#chain.then(() => this.#busy--);
    return run;
  }

  async #fire(): Promise<number> {
    const owned = [...this.#cluster.owned().keys()];
    if (!owned.length) return 0;
    const due = await this.#sql<{ actorId: string; name: string }[]>`select actor_id, name from actor_timers
      where shard in ${this.#sql(owned)} and due_at <= ${iso(this.#clock.now())} order by due_at limit 500`;
    for (const t of due) {
      try {
        await this.#cluster.ask(t.actorId, { type: 'TIMER', name: t.name });
      } catch (err) {
        if (err instanceof AppError && err.code === 'not_found') {
          await this.#sql`delete from actor_timers where actor_id = ${t.actorId} and name = ${t.name}`;
        } else {
          this.#log.warn({ err, actorId: t.actorId, timer: t.name }, 'timer delivery failed; retried next tick');
        }
      }
    }
    return due.length;
  }
}
