/**
 * Storage keys are relative paths such as `recordings/<orgId>/<recordingId>/audio.m4a`. They name
 * files on disk as well as objects in a bucket, so one rule keeps both safe: segments of letters,
 * digits, `_`, `-` and `.`, never starting with a dot. That rules out `.` and `..` (nothing above the
 * storage folder can be named), absolute paths and backslashes, and leaves names starting with a dot to
 * the disk backend's temporary files, which can then never be taken for a key.
 */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;
/** S3 allows 1,024 bytes; the keys here are ASCII, so characters are bytes. */
const MAX_KEY = 1024;

export class StorageKeyError extends Error {
  override name = 'StorageKeyError';
}

export class StorageNotFoundError extends Error {
  override name = 'StorageNotFoundError';
  readonly key: string;
  constructor(key: string, options?: ErrorOptions) {
    super(`nothing is stored under ${key}`, options);
    this.key = key;
  }
}

/** The key's segments; throws StorageKeyError for anything that is not a plain relative path. */
export function keySegments(key: string): string[] {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY) {
    throw new StorageKeyError(`a storage key is 1 to ${MAX_KEY} characters`);
  }
  const segments = key.split('/');
  for (const s of segments) {
    if (!SEGMENT.test(s)) {
      throw new StorageKeyError(
        `invalid storage key ${JSON.stringify(key)}: segments are letters, digits, "_", "-" and ".", 1 to 200 long, not starting with "."`,
      );
    }
  }
  return segments;
}

export function isKeySegment(name: string): boolean {
  return SEGMENT.test(name);
}

export function checkKey(key: string): string {
  keySegments(key);
  return key;
}

/**
 * A prefix names a folder: a key, with or without its trailing `/`. Given back with the slash, so
 * `recordings/org_1` never matches `recordings/org_12/...`.
 */
export function folderPrefix(prefix: string): string {
  const trimmed = typeof prefix === 'string' && prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  keySegments(trimmed);
  return `${trimmed}/`;
}

/**
 * A Content-Disposition that names a download: a quoted ASCII fallback for old clients and the exact
 * name in RFC 5987 form. Quotes, backslashes and control characters never reach the header.
 */
export function attachmentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const exact = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`;
}
