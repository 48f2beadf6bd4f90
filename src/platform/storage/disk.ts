import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../logger.ts';
import { folderPrefix, isKeySegment, keySegments, StorageNotFoundError } from './keys.ts';
import type { Storage } from './storage.ts';

/** Errors that mean "nothing stored there": a missing file, or a path through a file or into a folder. */
const ABSENT = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);
const absent = (err: unknown) => ABSENT.has((err as NodeJS.ErrnoException).code ?? '');

/**
 * Files in one folder, private to the server's user like the embedded database: folders 0700, files
 * 0600, whatever the umask. A put writes a temporary file beside the target (a name starting with a dot,
 * which no key can have), syncs it and renames it over the target, so a reader sees the old file or the
 * whole new one, and a crash leaves at worst a temporary file that list() never shows.
 */
export class DiskStorage implements Storage {
  readonly kind = 'disk' as const;
  readonly #root: string;

  private constructor(root: string) {
    this.#root = root;
  }

  /** Makes the folder (0700) if it is missing, and takes group and other access off it if it had them. */
  static async open(dir: string, log?: Logger): Promise<DiskStorage> {
    const root = resolve(dir);
    await mkdir(root, { recursive: true, mode: 0o700 });
    const st = await stat(root);
    if (!st.isDirectory()) throw new Error(`the storage folder ${root} is not a folder`);
    if (st.mode & 0o077) {
      await chmod(root, 0o700);
      log?.warn({ dir: root }, 'the storage folder was open to other users of this machine: tightened it to 0700');
    }
    return new DiskStorage(root);
  }

  #path(key: string): string {
    return join(this.#root, ...keySegments(key));
  }

  async put(key: string, localPath: string, _contentType: string): Promise<{ bytes: number }> {
    const path = this.#path(key);
    const dir = dirname(path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
    let bytes: number;
    try {
      // flush: fsync before close, so the rename never publishes a file whose bytes are not on disk yet.
      await pipeline(createReadStream(localPath), createWriteStream(tmp, { flags: 'wx', mode: 0o600, flush: true }));
      bytes = (await stat(tmp)).size;
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    await syncFolder(dir);
    return { bytes };
  }

  async fetch(key: string, localPath: string): Promise<void> {
    const src = await this.#openFile(key);
    let out: FileHandle;
    try {
      out = await open(localPath, 'w', 0o600);
    } catch (err) {
      await src.close();
      throw err;
    }
    // Each handle is closed by its stream when the copy ends or fails.
    await pipeline(src.createReadStream(), out.createWriteStream());
  }

  async size(key: string): Promise<number | null> {
    try {
      const st = await stat(this.#path(key));
      return st.isFile() ? st.size : null;
    } catch (err) {
      if (absent(err)) return null;
      throw err;
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
    const fh = await this.#openFile(key);
    return fh.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async list(prefix: string): Promise<string[]> {
    const folder = folderPrefix(prefix);
    const keys: string[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (absent(err)) return;
        throw err;
      }
      for (const e of entries) {
        // Temporary files of puts under way start with a dot; anything else no key can name is not ours.
        if (!isKeySegment(e.name)) continue;
        if (e.isDirectory()) await walk(join(dir, e.name), `${rel}${e.name}/`);
        else if (e.isFile()) keys.push(`${rel}${e.name}`);
      }
    };
    await walk(this.#folderPath(folder), folder);
    return keys.sort();
  }

  async deletePrefix(prefix: string): Promise<number> {
    const folder = folderPrefix(prefix);
    const keys = await this.list(folder);
    await rm(this.#folderPath(folder), { recursive: true, force: true });
    return keys.length;
  }

  async presign(key: string, _expiresInSeconds: number, _opts: { contentType: string; filename?: string }): Promise<string | null> {
    keySegments(key);
    return null;
  }

  async localFolder(prefix: string): Promise<string> {
    const path = this.#folderPath(folderPrefix(prefix));
    await mkdir(path, { recursive: true, mode: 0o700 });
    return path;
  }

  #folderPath(folder: string): string {
    return this.#path(folder.slice(0, -1));
  }

  /** The stored file opened for reading; StorageNotFoundError when there is none (a folder is none). */
  async #openFile(key: string): Promise<FileHandle> {
    const path = this.#path(key);
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (err) {
      if (absent(err)) throw new StorageNotFoundError(key, { cause: err });
      throw err;
    }
    if (!(await fh.stat()).isFile()) {
      await fh.close();
      throw new StorageNotFoundError(key);
    }
    return fh;
  }
}

/** Makes a rename in `dir` durable: without it a crash right after put() could bring the old file back. */
async function syncFolder(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // Some filesystems (and platforms) cannot sync a folder; the rename stands, only its durability is weaker.
  } finally {
    await fh?.close();
  }
}
