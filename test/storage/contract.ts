import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { StorageKeyError, StorageNotFoundError, type Storage } from '../../src/platform/storage/index.ts';

export interface StorageEnv {
  storage: Storage;
  /** What the backend's own check of a presigned URL looks like: s3 GETs it, disk expects null. */
  checkPresign(t: Test, storage: Storage, key: string, body: Buffer): Promise<void>;
  /** Runs around the 20 MB put: s3 checks that it went up in parts. */
  bigPut?(t: Test, put: () => Promise<void>): Promise<void>;
}

/** Keys that would reach outside the storage folder, or that the key rule refuses for being ambiguous. */
export const ESCAPES = ['../x', '/etc/passwd', 'a/../../b', '..', 'a/..', './a', 'a//b', 'a/', '', 'a\\..\\b', '.hidden', 'a/.tmp', '%2e%2e/x', 'a b', 'ü'];

export async function scratch(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'aula-storage-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c as string));
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let n = 0;
/** A folder of keys of its own for each test, so the tests never see each other's objects. */
const folder = () => `recordings/org_${process.pid}/rec_${Date.now().toString(36)}_${n++}`;

/** The behaviour every Storage shares; run by disk.test.ts and s3.test.ts. */
export function storageContract(t: Test, env: StorageEnv): void {
  const { storage } = env;

  t.test('put() then size(), fetch() and read() give back the same bytes', async (t) => {
    const dir = await scratch(t);
    const body = randomBytes(4096 + 17);
    await writeFile(join(dir, 'in'), body);
    const key = `${folder()}/track-1.rtp`;
    t.same(await storage.put(key, join(dir, 'in'), 'application/octet-stream'), { bytes: body.length });
    t.equal(await storage.size(key), body.length);
    await storage.fetch(key, join(dir, 'out'));
    t.ok((await readFile(join(dir, 'out'))).equals(body), 'fetch() copies it');
    t.ok((await collect(await storage.read(key))).equals(body), 'read() without a range is the whole object');
  });

  t.test('read() with a range gives bytes start..end inclusive', async (t) => {
    const dir = await scratch(t);
    const body = randomBytes(10_000);
    await writeFile(join(dir, 'in'), body);
    const key = `${folder()}/video.mp4`;
    await storage.put(key, join(dir, 'in'), 'video/mp4');
    const cases = {
      'the first bytes': { start: 0, end: 99 },
      'the first byte': { start: 0, end: 0 },
      'the middle': { start: 4000, end: 5999 },
      'the last byte': { start: 9999, end: 9999 },
      'the tail': { start: 9000, end: 9999 },
    };
    for (const [name, range] of Object.entries(cases)) {
      const got = await collect(await storage.read(key, range));
      t.ok(got.equals(body.subarray(range.start, range.end + 1)), `${name} (${range.start}-${range.end})`);
    }
  });

  t.test('put() replaces what was stored under the key', async (t) => {
    const dir = await scratch(t);
    const key = `${folder()}/audio.m4a`;
    await writeFile(join(dir, 'a'), 'the first, longer version');
    await writeFile(join(dir, 'b'), 'second');
    await storage.put(key, join(dir, 'a'), 'audio/mp4');
    t.same(await storage.put(key, join(dir, 'b'), 'audio/mp4'), { bytes: 6 });
    t.equal(await storage.size(key), 6);
    t.equal((await collect(await storage.read(key))).toString(), 'second');
  });

  t.test('put() of an empty file stores an empty object', async (t) => {
    const dir = await scratch(t);
    await writeFile(join(dir, 'empty'), '');
    const key = `${folder()}/empty.bin`;
    t.same(await storage.put(key, join(dir, 'empty'), 'application/octet-stream'), { bytes: 0 });
    t.equal(await storage.size(key), 0);
    t.equal((await collect(await storage.read(key))).length, 0);
  });

  t.test('put() of a local file that is missing fails and leaves the stored object as it was', async (t) => {
    const dir = await scratch(t);
    const key = `${folder()}/kept.bin`;
    await writeFile(join(dir, 'in'), 'kept');
    await storage.put(key, join(dir, 'in'), 'application/octet-stream');
    await t.rejects(storage.put(key, join(dir, 'missing'), 'application/octet-stream'), { code: 'ENOENT' });
    t.equal((await collect(await storage.read(key))).toString(), 'kept');
    t.same(await storage.list(key.slice(0, key.lastIndexOf('/'))), [key], 'and nothing else appeared');
  });

  t.test('a key with nothing stored: size() is null, fetch() and read() reject with StorageNotFoundError', async (t) => {
    const dir = await scratch(t);
    const base = folder();
    const key = `${base}/missing.mp4`;
    t.equal(await storage.size(key), null);
    await t.rejects(storage.fetch(key, join(dir, 'out')), StorageNotFoundError);
    await t.rejects(storage.read(key), StorageNotFoundError);
    await t.rejects(storage.read(key, { start: 0, end: 0 }), StorageNotFoundError);
    t.same(await storage.list(base), []);
    t.equal(await storage.deletePrefix(base), 0);
    await t.rejects(readFile(join(dir, 'out')), { code: 'ENOENT' }, 'fetch() made no local file');
    // A "folder" that holds keys is not itself a key.
    await writeFile(join(dir, 'in'), 'x');
    await storage.put(`${base}/sub/file`, join(dir, 'in'), 'text/plain');
    t.equal(await storage.size(`${base}/sub`), null, 'size() of a folder');
    await t.rejects(storage.read(`${base}/sub`), StorageNotFoundError, 'read() of a folder');
  });

  t.test('list() gives every key under a folder, at any depth, sorted', async (t) => {
    const dir = await scratch(t);
    await writeFile(join(dir, 'in'), 'x');
    const base = folder();
    const keys = [`${base}/b/2.rtp`, `${base}/a.mp4`, `${base}/b/1.rtp`, `${base}/b/c/deep.txt`, `${base}/B.m4a`, `${base}x/other`, `${base}/a.mp4.bak`];
    for (const k of keys) await storage.put(k, join(dir, 'in'), 'application/octet-stream');
    const mine = keys.filter((k) => k.startsWith(`${base}/`)).sort();
    t.same(await storage.list(base), mine, 'a folder without its slash');
    t.same(await storage.list(`${base}/`), mine, 'and with it');
    t.same(await storage.list(`${base}/b`), [`${base}/b/1.rtp`, `${base}/b/2.rtp`, `${base}/b/c/deep.txt`]);
    t.same(await storage.list(`${base}x`), [`${base}x/other`], 'a folder whose name extends another is its own');
    t.same(await storage.list(`${base}/a.mp4`), [], 'a key is not a folder');
  });

  t.test('deletePrefix() removes everything under a folder and counts it; the rest stays', async (t) => {
    const dir = await scratch(t);
    await writeFile(join(dir, 'in'), 'x');
    const base = folder();
    const doomed = [`${base}/r1/video.mp4`, `${base}/r1/audio.m4a`, `${base}/r1/raw/t1.rtp`, `${base}/r1/raw/t2.rtp`];
    const kept = [`${base}/r10/video.mp4`, `${base}/r2/video.mp4`];
    for (const k of [...doomed, ...kept]) await storage.put(k, join(dir, 'in'), 'application/octet-stream');
    t.equal(await storage.deletePrefix(`${base}/r1`), doomed.length);
    t.same(await storage.list(`${base}/r1`), []);
    for (const k of doomed) t.equal(await storage.size(k), null, `${k} is gone`);
    t.same(await storage.list(base), kept.sort(), 'r10 and r2 are untouched');
    t.equal(await storage.deletePrefix(`${base}/r1/`), 0, 'a second time finds nothing');
  });

  t.test('keys that try to leave the storage (or are not plain relative paths) are refused by every method', async (t) => {
    const dir = await scratch(t);
    await writeFile(join(dir, 'in'), 'x');
    for (const key of ESCAPES) {
      const name = JSON.stringify(key);
      await t.rejects(storage.put(key, join(dir, 'in'), 'text/plain'), StorageKeyError, `put(${name})`);
      await t.rejects(storage.fetch(key, join(dir, 'out')), StorageKeyError, `fetch(${name})`);
      await t.rejects(storage.size(key), StorageKeyError, `size(${name})`);
      await t.rejects(storage.read(key), StorageKeyError, `read(${name})`);
      await t.rejects(storage.presign(key, 60, { contentType: 'text/plain' }), StorageKeyError, `presign(${name})`);
      if (key === 'a/') continue; // as a prefix, `a/` is the folder a
      await t.rejects(storage.list(key), StorageKeyError, `list(${name})`);
      await t.rejects(storage.deletePrefix(key), StorageKeyError, `deletePrefix(${name})`);
    }
    t.same(await readdir(dir), ['in'], 'fetch() wrote nothing');
  });

  t.test('a 20 MB file goes in and comes back whole', async (t) => {
    const dir = await scratch(t);
    const body = randomBytes(20 * 1024 * 1024);
    await writeFile(join(dir, 'in'), body);
    const key = `${folder()}/video.mp4`;
    const put = async () => {
      t.same(await storage.put(key, join(dir, 'in'), 'video/mp4'), { bytes: body.length });
    };
    if (env.bigPut) await env.bigPut(t, put);
    else await put();
    t.equal(await storage.size(key), body.length);
    await storage.fetch(key, join(dir, 'out'));
    t.equal(sha(await readFile(join(dir, 'out'))), sha(body), 'fetch() gives the same bytes');
    const edge = 8 * 1024 * 1024;
    const range = { start: edge - 5, end: edge + 5 };
    t.ok((await collect(await storage.read(key, range))).equals(body.subarray(range.start, range.end + 1)), 'a range across a part boundary');
    const last = { start: body.length - 1, end: body.length - 1 };
    t.ok((await collect(await storage.read(key, last))).equals(body.subarray(-1)), 'the last byte');
  });

  t.test('presign()', async (t) => {
    const dir = await scratch(t);
    const body = randomBytes(2048);
    await writeFile(join(dir, 'in'), body);
    const key = `${folder()}/video.mp4`;
    await storage.put(key, join(dir, 'in'), 'video/mp4');
    await env.checkPresign(t, storage, key, body);
  });
}
