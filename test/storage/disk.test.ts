import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { DiskStorage, openStorage, storageDir } from '../../src/platform/storage/index.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { ESCAPES, scratch, storageContract } from './contract.ts';

// A umask that takes nothing away: the modes below must come from the storage, not from the environment.
process.umask(0);

const mode = async (path: string) => (await stat(path)).mode & 0o777;

t.test('DiskStorage', async (t) => {
  const root = join(await scratch(t), 'storage');
  const storage = await DiskStorage.open(root);
  storageContract(t, {
    storage,
    async checkPresign(t, storage, key) {
      t.equal(await storage.presign(key, 60, { contentType: 'video/mp4', filename: 'class.mp4' }), null, 'null: the server serves the file');
    },
  });
});

t.test('DiskStorage keeps its folders 0700 and its files 0600 under any umask', async (t) => {
  const root = join(await scratch(t), 'data', 'storage');
  const storage = await DiskStorage.open(root);
  t.equal(await mode(root), 0o700, 'the folder it made');
  const src = join(root, '..', 'in');
  await writeFile(src, 'x', { mode: 0o644 });
  await storage.put('recordings/org_1/rec_1/raw/track.rtp', src, 'application/octet-stream');
  let path = root;
  for (const segment of ['recordings', 'org_1', 'rec_1', 'raw']) {
    path = join(path, segment);
    t.equal(await mode(path), 0o700, `folder ${segment}`);
  }
  t.equal(await mode(join(path, 'track.rtp')), 0o600, 'the file');
  await storage.fetch('recordings/org_1/rec_1/raw/track.rtp', join(root, '..', 'out'));
  t.equal(await mode(join(root, '..', 'out')), 0o600, 'a fetched copy is private too');
});

t.test('DiskStorage.open() takes group and other access off a folder that had them', async (t) => {
  const root = join(await scratch(t), 'storage');
  await mkdir(root, { mode: 0o755 });
  const warned: unknown[] = [];
  const log = { warn: (...args: unknown[]) => warned.push(args) } as never;
  await DiskStorage.open(root, log);
  t.equal(await mode(root), 0o700);
  t.equal(warned.length, 1, 'and says so');
  await DiskStorage.open(root, log);
  t.equal(warned.length, 1, 'once');
});

t.test('DiskStorage writes through a temporary file that list() never shows, and leaves none behind', async (t) => {
  const dir = await scratch(t);
  const root = join(dir, 'storage');
  const storage = await DiskStorage.open(root);
  await writeFile(join(dir, 'in'), 'x');
  await storage.put('recordings/o/r/a.mp4', join(dir, 'in'), 'video/mp4');
  t.same(await readdir(join(root, 'recordings/o/r')), ['a.mp4'], 'only the file after a put');
  // What a put that was killed midway leaves behind.
  await writeFile(join(root, 'recordings/o/r/.a.mp4.0123456789ab.tmp'), 'partial');
  t.same(await storage.list('recordings/o/r'), ['recordings/o/r/a.mp4']);
  t.equal(await storage.deletePrefix('recordings/o/r'), 1, 'counts keys, not leftovers');
  t.same(await readdir(join(root, 'recordings/o')), [], 'the leftover goes with its folder');
});

t.test('DiskStorage never touches anything outside its folder', async (t) => {
  const dir = await scratch(t);
  const root = join(dir, 'a', 'storage');
  await mkdir(join(dir, 'b'), { recursive: true });
  await writeFile(join(dir, 'b', 'victim'), 'mine');
  await writeFile(join(dir, 'in'), 'evil');
  const storage = await DiskStorage.open(root);
  for (const key of [...ESCAPES, '../../b/victim', 'x/../../../b/victim']) {
    await storage.put(key, join(dir, 'in'), 'text/plain').catch(() => {});
    await storage.deletePrefix(key).catch(() => {});
  }
  t.same((await readdir(dir)).sort(), ['a', 'b', 'in']);
  t.same(await readdir(join(dir, 'a')), ['storage']);
  t.same(await readdir(root), [], 'nothing was stored');
  t.same(await readdir(join(dir, 'b')), ['victim']);
});

t.test('the disk folder: AULA_STORAGE_DIR, else storage/ in the data folder', async (t) => {
  const dir = await scratch(t);
  const config = loadConfig({ AULA_DATA_DIR: join(dir, 'data') });
  t.equal(config.AULA_STORAGE, 'disk', 'disk is the default');
  t.equal(storageDir(config), join(dir, 'data', 'storage'));
  const storage = await openStorage(config);
  t.equal(storage.kind, 'disk');
  t.equal(await mode(join(dir, 'data', 'storage')), 0o700);
  const elsewhere = loadConfig({ AULA_DATA_DIR: join(dir, 'data'), AULA_STORAGE_DIR: join(dir, 'shared') });
  t.equal(storageDir(elsewhere), join(dir, 'shared'));
});
