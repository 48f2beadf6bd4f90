import { availableParallelism } from 'node:os';
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseTrustProxy } from './client-address.ts';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** A TURN server URL as WebRTC takes it (RFC 7065): scheme, host (a name, IPv4, or [IPv6]), optional port and transport. */
const TURN_URL = /^turns?:(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:\?transport=(?:udp|tcp))?$/;

/** Every setting the server reads, from environment variables prefixed `AULA_`. */
export const configSchema = z.object({
  AULA_ENV: z.enum(['development', 'test', 'production']).default('development'),
  AULA_HOST: z.string().min(1).default('0.0.0.0'),
  AULA_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  AULA_BASE_URL: z.url().optional(),
  AULA_DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  AULA_DATABASE_POOL: z.coerce.number().int().min(1).max(100).default(10),
  AULA_REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional(),
  AULA_REDIS_PREFIX: z.string().regex(/^[\w:.-]*$/).default('aula:'),
  AULA_SECRET_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  AULA_DATA_DIR: z.string().min(1).default('.aula'),
  AULA_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Prometheus metrics on a port of their own (bound like the API) instead of GET /metrics on the API port. */
  AULA_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** When set, /metrics asks for `Authorization: Bearer <token>`. */
  AULA_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  AULA_MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  AULA_BULK_MAX_BODY_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(4 * 1024 * 1024),
  /** Proxies trusted to name the client in X-Forwarded-For: a hop count or their networks (src/platform/client-address.ts). */
  AULA_TRUST_PROXY: z
    .string()
    .default('false')
    .transform((v, ctx) => {
      try {
        return parseTrustProxy(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  AULA_MIGRATE_ON_START: bool.default(true),
  AULA_JOB_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  /** Outgoing email (owner and admin notifications); unset: emails stay queued in email_outbox, unsent. */
  AULA_SMTP_URL: z.url({ protocol: /^smtps?$/, hostname: /./, error: 'must be an smtp:// or smtps:// URL with a host' }).optional(),
  AULA_MAIL_FROM: z.string().min(3).max(320).regex(/^[^\r\n]*@[^\r\n]*$/, 'must be an address, or "Name <address>", on one line').default('Aula <no-reply@localhost>'),
  /** Webhook sends in flight at once per endpoint, and per node over all endpoints. */
  AULA_WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
  AULA_WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(512),
  /** How often a node looks for due webhook sends and undispatched events besides being woken. */
  AULA_WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(500),
  /** mediasoup workers on this node (one per core by default); 0 makes a node that only signals and never hosts media. */
  AULA_MEDIA_WORKERS: z.coerce.number().int().min(0).max(256).default(availableParallelism()),
  /** Where workers listen for ICE/RTP; each worker takes one port (UDP and TCP) from the range, the first free one. */
  AULA_MEDIA_LISTEN_IP: z.string().refine((v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address').default('0.0.0.0'),
  /** The address clients are told to send media to (the public IP behind NAT); required in production when listening on a wildcard. */
  AULA_MEDIA_ANNOUNCED_ADDRESS: z.string().refine((v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address').optional(),
  AULA_MEDIA_PORT_MIN: z.coerce.number().int().min(1024).max(65535).default(40000),
  AULA_MEDIA_PORT_MAX: z.coerce.number().int().min(1024).max(65535).default(40999),
  /** Consumers one worker should carry before a room spreads its new receivers over another worker's router (pipeToRouter). */
  AULA_MEDIA_CONSUMERS_PER_WORKER: z.coerce.number().int().min(1).max(100_000).default(500),
  /** Bitrate a client may send on one transport, and the estimate a receiving transport starts from (bits/s). */
  AULA_MEDIA_MAX_INCOMING_BITRATE: z.coerce.number().int().min(100_000).max(100_000_000).default(5_000_000),
  AULA_MEDIA_INITIAL_OUTGOING_BITRATE: z.coerce.number().int().min(100_000).max(100_000_000).default(1_000_000),
  AULA_MEDIA_LOG_LEVEL: z.enum(['debug', 'warn', 'error', 'none']).default('warn'),
  /**
   * TURN relays (coturn) for networks that block the media ports: comma-separated `turn:`/`turns:` URLs,
   * e.g. `turn:turn.school.example:3478?transport=udp,turns:turn.school.example:443?transport=tcp`.
   * Each media session gets coturn REST credentials from AULA_TURN_SECRET (docs/networks.md).
   */
  AULA_TURN_URLS: z
    .string()
    .transform((v, ctx) => {
      const urls = v.split(',').map((u) => u.trim()).filter(Boolean);
      for (const u of urls) {
        if (!TURN_URL.test(u)) ctx.addIssue({ code: 'custom', message: `"${u}" is not a turn: or turns: URL (turn:host:port?transport=udp|tcp)` });
      }
      return urls;
    })
    .optional(),
  /** coturn's `static-auth-secret` (its `use-auth-secret` mode): Aula signs each session's TURN credentials with it. */
  AULA_TURN_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  /** How long a participant who dropped keeps their place and media in the room (seconds); after it, they leave. */
  AULA_ROOM_GRACE_SECONDS: z.coerce.number().int().min(1).max(600).default(15),
  /** Where recordings' files go (docs/storage.md): a folder on disk, or an S3-compatible bucket. */
  AULA_STORAGE: z.enum(['disk', 's3']).default('disk'),
  /** The disk backend's folder; unset: `storage` in AULA_DATA_DIR. */
  AULA_STORAGE_DIR: z.string().min(1).optional(),
  /** An S3-compatible server (addressed path-style); unset: AWS S3 itself. */
  AULA_S3_ENDPOINT: z.url({ protocol: /^https?$/, hostname: /./, error: 'must be an http:// or https:// URL with a host' }).optional(),
  AULA_S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name: 3 to 63 lowercase letters, digits, "." and "-"').optional(),
  AULA_S3_REGION: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a region name such as eu-west-1').optional(),
  AULA_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  AULA_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Transcription of recordings (docs/ai-notes.md): the offline PocketSphinx (English only), or an OpenAI-compatible /v1/audio/transcriptions. */
  AULA_ASR_ENGINE: z.enum(['pocketsphinx', 'openai']).default('pocketsphinx'),
  /** The OpenAI-compatible server's base URL, up to and including `/v1` (e.g. https://api.openai.com/v1). */
  AULA_ASR_URL: z.url({ protocol: /^https?$/, hostname: /./, error: 'must be an http:// or https:// URL with a host' }).optional(),
  /** Sent as `Authorization: Bearer <key>`; never logged. */
  AULA_ASR_KEY: z.string().min(1).optional(),
  AULA_ASR_MODEL: z.string().min(1).max(200).default('whisper-1'),
  /** Lecture notes from a transcript: offline extractive notes, or an OpenAI-compatible /v1/chat/completions. */
  AULA_NOTES_ENGINE: z.enum(['extractive', 'openai']).default('extractive'),
  AULA_NOTES_URL: z.url({ protocol: /^https?$/, hostname: /./, error: 'must be an http:// or https:// URL with a host' }).optional(),
  /** Sent as `Authorization: Bearer <key>`; never logged. */
  AULA_NOTES_KEY: z.string().min(1).optional(),
  AULA_NOTES_MODEL: z.string().min(1).max(200).default('gpt-4o-mini'),
  /** The spec's switch, under its own name (no prefix): local http webhook receivers, outside production only. */
  WEBHOOKS_ALLOW_PRIVATE_TARGETS: bool.default(false),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment once; a bad value fails fast naming every offending variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== '') picked[key] = v;
  }
  const parsed = configSchema.safeParse(picked);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const config = { ...parsed.data, ...overrides };
  if (config.AULA_ENV === 'production' && !config.AULA_SECRET_KEY) {
    throw new ConfigError('invalid configuration:\n  AULA_SECRET_KEY: required in production');
  }
  if (config.AULA_MEDIA_PORT_MIN > config.AULA_MEDIA_PORT_MAX) {
    throw new ConfigError('invalid configuration:\n  AULA_MEDIA_PORT_MIN: must not be above AULA_MEDIA_PORT_MAX');
  }
  const wildcard = config.AULA_MEDIA_LISTEN_IP === '0.0.0.0' || config.AULA_MEDIA_LISTEN_IP === '::';
  if (config.AULA_ENV === 'production' && config.AULA_MEDIA_WORKERS > 0 && wildcard && !config.AULA_MEDIA_ANNOUNCED_ADDRESS) {
    throw new ConfigError('invalid configuration:\n  AULA_MEDIA_ANNOUNCED_ADDRESS: required in production when AULA_MEDIA_LISTEN_IP is a wildcard (the address clients send media to)');
  }
  if (config.AULA_TURN_URLS?.length && !config.AULA_TURN_SECRET) {
    throw new ConfigError('invalid configuration:\n  AULA_TURN_SECRET: required with AULA_TURN_URLS (coturn\'s static-auth-secret)');
  }
  if (config.AULA_STORAGE === 's3') {
    const needed = ['AULA_S3_BUCKET', 'AULA_S3_REGION', 'AULA_S3_ACCESS_KEY_ID', 'AULA_S3_SECRET_ACCESS_KEY'] as const;
    const lines = needed.filter((k) => !config[k]).map((k) => `  ${k}: required when AULA_STORAGE=s3`);
    if (lines.length) throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  if (config.AULA_ASR_ENGINE === 'openai' && !config.AULA_ASR_URL) {
    throw new ConfigError('invalid configuration:\n  AULA_ASR_URL: required when AULA_ASR_ENGINE=openai');
  }
  if (config.AULA_NOTES_ENGINE === 'openai' && !config.AULA_NOTES_URL) {
    throw new ConfigError('invalid configuration:\n  AULA_NOTES_URL: required when AULA_NOTES_ENGINE=openai');
  }
  return config;
}

/** Whether webhook targets may be local http receivers: the switch is ignored in production. */
export function allowPrivateTargets(config: Pick<Config, 'AULA_ENV' | 'WEBHOOKS_ALLOW_PRIVATE_TARGETS'>): boolean {
  return config.AULA_ENV !== 'production' && config.WEBHOOKS_ALLOW_PRIVATE_TARGETS === true;
}

/** What clients are told to send media to: the announced address, else the listen address, else (a wildcard, outside production) loopback. */
export function mediaAnnouncedAddress(config: Config): string {
  if (config.AULA_MEDIA_ANNOUNCED_ADDRESS) return config.AULA_MEDIA_ANNOUNCED_ADDRESS;
  if (config.AULA_MEDIA_LISTEN_IP === '0.0.0.0') return '127.0.0.1';
  if (config.AULA_MEDIA_LISTEN_IP === '::') return '::1';
  return config.AULA_MEDIA_LISTEN_IP;
}

export function baseUrl(config: Config, port: number): string {
  if (config.AULA_BASE_URL) return config.AULA_BASE_URL.replace(/\/+$/, '');
  const host = config.AULA_HOST === '0.0.0.0' || config.AULA_HOST === '::' ? '127.0.0.1' : config.AULA_HOST;
  return `http://${host}:${port}`;
}
