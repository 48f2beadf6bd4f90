/**
 * Where recordings' files live: one interface, a folder on disk (disk.ts) or an S3-compatible bucket
 * (s3.ts). Keys are relative paths (keys.ts); every method refuses an invalid one with StorageKeyError.
 */
export interface Storage {
  readonly kind: 'disk' | 's3';
  /** Stores a local file under `key` (replacing one there). */
  put(key: string, localPath: string, contentType: string): Promise<{ bytes: number }>;
  /** Copies what is stored under `key` to a local file; StorageNotFoundError when nothing is. */
  fetch(key: string, localPath: string): Promise<void>;
  /** Size in bytes, or null when nothing is stored under `key`. */
  size(key: string): Promise<number | null>;
  /**
   * A readable stream of bytes start..end inclusive (both within the object; the caller checked), or
   * of the whole object; StorageNotFoundError when nothing is stored under `key`.
   */
  read(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream>;
  /** Keys under a prefix (a "folder": `a/b` and `a/b/` both mean everything in a/b, at any depth), sorted. */
  list(prefix: string): Promise<string[]>;
  /** Removes every object under a prefix (a folder, as for list); how many were removed. */
  deletePrefix(prefix: string): Promise<number>;
  /**
   * s3: a presigned GET URL valid for `expiresInSeconds` (1 to 604,800, S3's limit) that answers with
   * `contentType` and, when `filename` is given, as a download of that name; disk: null (the server
   * serves the file itself). No request is made: the URL is signed whether or not the key exists.
   */
  presign(key: string, expiresInSeconds: number, opts: { contentType: string; filename?: string }): Promise<string | null>;
  /**
   * disk only: the folder that holds a prefix's objects (made 0700), for a writer that fills it in place
   * (a recording's capture, so that a node that dies leaves what it wrote in storage). Files written
   * there are the prefix's objects; their names must be valid key segments.
   */
  localFolder?(prefix: string): Promise<string>;
}
