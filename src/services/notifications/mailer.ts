import { createTransport } from 'nodemailer';
import { iso, type Clock } from '../../core/clock.ts';
import type { Config } from '../../platform/config.ts';
import type { Sql } from '../../platform/db/index.ts';
import type { Logger } from '../../platform/logger.ts';

/** After the 1st to 5th failed attempt; the 6th failure is final (`failed_at`). About 8.6 hours in all. */
export const MAIL_RETRY_DELAYS_MS: readonly number[] = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000];
export const MAIL_MAX_ATTEMPTS = MAIL_RETRY_DELAYS_MS.length + 1;
/** How long a claimed email is reserved for the node sending it; longer than one send may take. */
export const MAIL_LEASE_MS = 5 * 60_000;
/** One send (connect, greeting, TLS, the whole SMTP dialogue) is abandoned after this, in real time. */
export const MAIL_SEND_TIMEOUT_MS = 60_000;
/** An email not sent within 7 days of being written (e.g. AULA_SMTP_URL set a month later) is dropped as stale. */
export const MAIL_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** How often a node looks for due emails. */
export const MAIL_POLL_MS = 5_000;

export interface MailerOptions {
  /** Emails claimed, and sent concurrently, at a time. Default 5. */
  batchSize?: number;
  leaseMs?: number;
  sendTimeoutMs?: number;
}

interface OutboxRow {
  id: string;
  toAddress: string;
  subject: string;
  textBody: string;
  createdAt: Date;
  attempts: number;
  claimedUntil: Date;
}

type Transport = ReturnType<typeof createTransport>;

interface SmtpError {
  code?: string;
  command?: string;
  responseCode?: number;
  message?: string;
}

/** A recipient the server refused for good (5xx to RCPT TO): retrying cannot help. */
const isPermanent = (err: SmtpError): boolean => err.command === 'RCPT TO' && typeof err.responseCode === 'number' && err.responseCode >= 500;

function describe(err: unknown): string {
  const e = (err ?? {}) as SmtpError;
  const text = [e.code, e.command, e.responseCode].filter((x) => x !== undefined && x !== '').join(' ');
  return `${text ? `${text}: ` : ''}${e.message ?? String(err)}`.slice(0, 1000);
}

/** The domain of AULA_MAIL_FROM, for Message-IDs. */
function fromDomain(from: string): string {
  const m = /@([^\s>]+)/.exec(from);
  return m ? m[1]!.toLowerCase() : 'localhost';
}

/**
 * Sends `email_outbox` rows over SMTP (nodemailer, AULA_SMTP_URL). Every node runs one: a node
 * claims due rows with `for update skip locked` and a `claimed_until` lease, so no two nodes send a
 * row at once, and a node that dies mid-send leaves its rows to others once the lease runs out.
 * Delivery is at least once: a node that dies after the server accepted a message but before
 * recording it sends it again after the lease (the Message-ID, `<emailId@domain>`, stays the same).
 * Failures are retried after 1 min, 5 min, 30 min, 2 h and 6 h; then, or at once when the server
 * refuses the recipient for good (5xx), the row gets `failed_at` and `last_error`.
 *
 * Without AULA_SMTP_URL nothing is sent: rows stay queued (and are sent once the URL is set, if
 * younger than 7 days), a warning is logged once at start, and in-app notifications work as ever.
 */
export class Mailer {
  readonly #sql: Sql;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #from: string;
  readonly #domain: string;
  readonly #transport: Transport | null;
  readonly #target: { host: string; port: number | null; secure: boolean } | null;
  readonly #batch: number;
  readonly #leaseMs: number;
  readonly #sendTimeoutMs: number;
  readonly #inFlight = new Set<Promise<number>>();
  #timer: NodeJS.Timeout | null = null;
  #polling = false;
  #stopped = false;

  constructor(sql: Sql, clock: Clock, log: Logger, config: Pick<Config, 'AULA_SMTP_URL' | 'AULA_MAIL_FROM'>, opts: MailerOptions = {}) {
    this.#sql = sql;
    this.#clock = clock;
    this.#log = log.child({ component: 'mailer' });
    this.#from = config.AULA_MAIL_FROM;
    this.#domain = fromDomain(config.AULA_MAIL_FROM);
    this.#batch = opts.batchSize ?? 5;
    this.#leaseMs = opts.leaseMs ?? MAIL_LEASE_MS;
    this.#sendTimeoutMs = opts.sendTimeoutMs ?? MAIL_SEND_TIMEOUT_MS;
    if (config.AULA_SMTP_URL) {
      const u = new URL(config.AULA_SMTP_URL);
      // Where it goes, for the logs; never the credentials.
      this.#target = { host: u.hostname, port: u.port ? Number(u.port) : null, secure: u.protocol === 'smtps:' };
      // Query parameters of the URL (nodemailer's options) win over these defaults.
      this.#transport = createTransport({
        url: config.AULA_SMTP_URL,
        connectionTimeout: 30_000,
        greetingTimeout: 30_000,
        socketTimeout: 60_000,
      });
    } else {
      this.#target = null;
      this.#transport = null;
    }
  }

  /** Whether AULA_SMTP_URL is set. */
  get enabled(): boolean {
    return this.#transport !== null;
  }

  /** Polls for due emails every `pollMs`; without AULA_SMTP_URL only says, once, that emails stay queued. */
  start(pollMs: number = MAIL_POLL_MS): void {
    if (!this.#transport) {
      this.#log.warn('AULA_SMTP_URL is unset: emails to owners and admins stay queued in email_outbox and are sent once it is set; in-app notifications work');
      return;
    }
    this.#log.info({ smtp: this.#target, from: this.#from }, 'mailer started');
    // Says early when the server cannot be reached or refuses the credentials; sends are retried anyway.
    this.#transport.verify().catch((err: unknown) => {
      if (!this.#stopped) this.#log.warn({ smtp: this.#target, error: describe(err) }, 'SMTP server check failed; emails stay queued and are retried');
    });
    this.#timer = setInterval(() => this.#poll(), pollMs);
    this.#timer.unref();
    this.#poll();
  }

  /** Stops polling, waits for sends in flight, closes the transport. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    while (this.#inFlight.size) await Promise.allSettled([...this.#inFlight]);
    this.#transport?.close();
  }

  /** Sends every email due now by the injected clock; resolves to how many were sent. Concurrent ticks are safe. */
  tick(): Promise<number> {
    const p = this.#drain();
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p)).catch(() => {});
    return p;
  }

  #poll(): void {
    if (this.#polling || this.#stopped) return;
    this.#polling = true;
    this.tick()
      .catch((err: unknown) => this.#log.error({ err }, 'mailer tick failed'))
      .finally(() => {
        this.#polling = false;
      });
  }

  async #drain(): Promise<number> {
    if (!this.#transport) return 0;
    let sent = 0;
    while (!this.#stopped) {
      const rows = await this.#claim();
      if (rows.length === 0) break;
      // Settle every send of the batch before going on (or failing): stop() waits for them all.
      const results = await Promise.allSettled(rows.map((r) => this.#send(r)));
      sent += results.filter((r) => r.status === 'fulfilled' && r.value).length;
      const failed = results.find((r) => r.status === 'rejected');
      // Recording an outcome failed (the database): the rows stay claimed and are retried after the lease.
      if (failed) throw failed.reason;
    }
    return sent;
  }

  async #claim(): Promise<OutboxRow[]> {
    const now = this.#clock.now();
    return this.#sql<OutboxRow[]>`update email_outbox set claimed_until = ${iso(now + this.#leaseMs)}, attempts = attempts + 1
      where id in (
        select id from email_outbox
        where sent_at is null and failed_at is null and next_attempt_at <= ${iso(now)}
          and (claimed_until is null or claimed_until <= ${iso(now)})
        order by next_attempt_at, id
        limit ${this.#batch}
        for update skip locked)
      returning id, to_address, subject, text_body, created_at, attempts, claimed_until`;
  }

  /** Sends one claimed row and records the outcome; true when sent. */
  async #send(row: OutboxRow): Promise<boolean> {
    if (this.#clock.now() - row.createdAt.getTime() > MAIL_MAX_AGE_MS) {
      await this.#fail(row, `expired: not sent within ${MAIL_MAX_AGE_MS / 86_400_000} days of being written`, true);
      return false;
    }
    try {
      await this.#transport!.sendMail({
        from: this.#from,
        to: row.toAddress,
        subject: row.subject,
        text: row.textBody,
        messageId: `<${row.id}@${this.#domain}>`,
        date: row.createdAt,
        // RFC 3834: out-of-office replies and the like are not sent back to us
        headers: { 'Auto-Submitted': 'auto-generated', 'X-Aula-Email-Id': row.id },
        signal: AbortSignal.timeout(this.#sendTimeoutMs),
      });
    } catch (err) {
      await this.#fail(row, describe(err), isPermanent(err as SmtpError));
      return false;
    }
    const done = await this.#sql`update email_outbox set sent_at = ${iso(this.#clock.now())}, claimed_until = null
      where id = ${row.id} and claimed_until = ${row.claimedUntil} returning id`;
    if (done.length === 0) this.#log.warn({ emailId: row.id }, 'email sent after its lease was taken over; it may be sent twice');
    return true;
  }

  async #fail(row: OutboxRow, error: string, final: boolean): Promise<void> {
    const now = this.#clock.now();
    const last = final || row.attempts >= MAIL_MAX_ATTEMPTS;
    if (last) {
      await this.#sql`update email_outbox set failed_at = ${iso(now)}, last_error = ${error}, claimed_until = null
        where id = ${row.id} and claimed_until = ${row.claimedUntil}`;
      this.#log.error({ emailId: row.id, attempts: row.attempts, error }, 'email not sent: giving up');
      return;
    }
    const next = now + MAIL_RETRY_DELAYS_MS[row.attempts - 1]!;
    await this.#sql`update email_outbox set next_attempt_at = ${iso(next)}, last_error = ${error}, claimed_until = null
      where id = ${row.id} and claimed_until = ${row.claimedUntil}`;
    this.#log.warn({ emailId: row.id, attempts: row.attempts, nextAttemptAt: iso(next), error }, 'email not sent; will retry');
  }
}
