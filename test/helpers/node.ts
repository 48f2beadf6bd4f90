import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { Test } from 'tap';
import type { Clock } from '../../src/core/clock.ts';
import type { Logger } from '../../src/platform/logger.ts';
import { loadConfig, type Config } from '../../src/platform/config.ts';
import { startNode, type Node } from '../../src/server/node.ts';
import type { PlanName } from '../../src/core/plans.ts';
import { SCOPES, type Scope } from '../../src/core/scopes.ts';
import { createOrg } from '../../src/services/orgs.ts';

export const PG_ADMIN_URL = process.env.AULA_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.AULA_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_SECRET = 'test-secret-key-0123456789-abcdefghijklmnop';

/** A fresh database on the machine's Postgres for one test file, dropped at teardown. */
export async function createTestDatabase(t: Test): Promise<string> {
  const name = `aula_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  t.teardown(async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestNodeOptions {
  clock?: Clock;
  databaseUrl?: string;
  /** Share Redis (real, on this machine) under this key prefix; a fresh prefix by default. */
  redisPrefix?: string;
  redis?: boolean;
  overrides?: Partial<Config>;
  /** The node's logger (a test that reads its lines passes one writing to memory). */
  logger?: Logger;
}

/** Starts a real node on port 0 against the real Postgres and Redis, closed at teardown. */
export async function startTestNode(t: Test, opts: TestNodeOptions = {}): Promise<Node> {
  const databaseUrl = opts.databaseUrl ?? (await createTestDatabase(t));
  const useRedis = opts.redis ?? true;
  // each node its own data folder (recordings' storage and spool), removed with it
  const dataDir = mkdtempSync(join(tmpdir(), 'aula-node-'));
  const config = loadConfig(
    {
      AULA_ENV: 'test',
      AULA_HOST: '127.0.0.1',
      AULA_PORT: '0',
      AULA_DATABASE_URL: databaseUrl,
      AULA_DATABASE_POOL: '10',
      AULA_SECRET_KEY: TEST_SECRET,
      AULA_LOG_LEVEL: process.env.AULA_TEST_LOG_LEVEL ?? 'silent',
      AULA_JOB_POLL_MS: '200',
      AULA_DATA_DIR: dataDir,
      AULA_MEDIA_WORKERS: '1',
      AULA_MEDIA_LISTEN_IP: '127.0.0.1',
      ...(useRedis ? { AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: opts.redisPrefix ?? `aulatest:${randomBytes(4).toString('hex')}:` } : {}),
    },
    opts.overrides,
  );
  const node = await startNode({ config, ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.logger ? { logger: opts.logger } : {}) });
  t.teardown(async () => {
    await node.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return node;
}

export interface Tenant {
  orgId: string;
  key: string;
  keyId: string;
}

/** An organization and an API key with the given scopes (all by default), made through the services. */
export async function createTenant(node: Node, plan: PlanName = 'pro', scopes: readonly Scope[] = SCOPES): Promise<Tenant> {
  const { app } = node;
  const org = await createOrg(app.sql, app.clock, { name: `Org ${randomBytes(3).toString('hex')}`, plan });
  const key = await app.services.apiKeys.create(app.sql, { orgId: org.id, name: 'test key', scopes: [...scopes] });
  return { orgId: org.id, key: key.key, keyId: key.id };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  /** the body as it came */
  text: string;
}

/** Real HTTP against the node. `body` objects are sent as JSON; strings and Buffers are sent as they are. */
export async function api<T = any>(
  node: Node,
  method: string,
  path: string,
  opts: { key?: string; bearer?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.key ?? opts.bearer;
  if (token && !('authorization' in headers)) headers.authorization = `Bearer ${token}`;
  let body: string | Blob | undefined;
  if (opts.body !== undefined) {
    if (typeof opts.body === 'string') body = opts.body;
    else if (Buffer.isBuffer(opts.body)) body = new Blob([new Uint8Array(opts.body)]);
    else body = JSON.stringify(opts.body);
    if (!('content-type' in headers)) headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${node.url}${path.startsWith('/api') || path.startsWith('/healthz') || path.startsWith('/readyz') || path.startsWith('/metrics') ? '' : '/api/v1'}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // left as text
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/**
 * A school to test with: a tenant on `plan`, its API calls (`call` answers the whole response), users
 * made through the API (named after their externalId unless given a name), and the events its outbox holds.
 */
export async function school(node: Node, plan: PlanName = 'pro') {
  const tenant = await createTenant(node, plan);
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    api(node, method, path, { key: tenant.key, ...(body ? { body } : {}), ...(headers ? { headers } : {}) });
  const user = async (externalId: string, fullName = externalId, role = 'STUDENT', extra: Record<string, unknown> = {}) =>
    (await call('POST', '/public/users', { externalId, fullName, role, ...extra })).body.data;
  const events = async (type: string) =>
    (await node.app.sql<{ data: any }[]>`select data from outbox where org_id = ${tenant.orgId} and type = ${type} order by id`).map((r) => r.data);
  return { tenant, call, user, events };
}
