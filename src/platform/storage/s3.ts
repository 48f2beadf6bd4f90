import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type GetObjectCommandOutput,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { attachmentDisposition, checkKey, folderPrefix, StorageNotFoundError } from './keys.ts';
import type { Storage } from './storage.ts';

export interface S3Settings {
  /** Absent: AWS itself. Present: that server, addressed path-style (`<endpoint>/<bucket>/<key>`). */
  endpoint?: string | undefined;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** Parts are at least this big (S3's minimum is 5 MiB); a bigger file gets bigger parts to stay under S3's 10,000. */
const PART_BYTES = 8 * 1024 * 1024;
const MAX_PARTS = 9_000;
/** Parts in flight for one upload: memory held is this many parts. */
const PARTS_IN_FLIGHT = 2;
/** DeleteObjects takes at most 1,000 keys. */
const DELETE_BATCH = 1000;
/** What S3 allows a presigned URL (SigV4): a week. */
const MAX_PRESIGN_SECONDS = 604_800;

export function s3Client(s: S3Settings): S3Client {
  return new S3Client({
    region: s.region,
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey },
    ...(s.endpoint ? { endpoint: s.endpoint, forcePathStyle: true } : {}),
    // The SDK's default adds CRC32 checksum headers to every upload (and aws-chunked trailers to streamed
    // bodies), which several S3-compatible servers refuse or do not implement. Checksums only where the
    // API requires one (DeleteObjects) is what S3-compatible servers accept.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

const missing = (err: unknown) => {
  const name = (err as { name?: string }).name;
  return name === 'NoSuchKey' || name === 'NotFound';
};

/** Objects in one bucket of AWS S3 or an S3-compatible server. */
export class S3Storage implements Storage {
  readonly kind = 's3' as const;
  readonly #client: S3Client;
  readonly #bucket: string;

  constructor(client: S3Client, bucket: string) {
    this.#client = client;
    this.#bucket = bucket;
  }

  static fromSettings(s: S3Settings): S3Storage {
    return new S3Storage(s3Client(s), s.bucket);
  }

  async put(key: string, localPath: string, contentType: string): Promise<{ bytes: number }> {
    checkKey(key);
    const { size } = await stat(localPath);
    const upload = new Upload({
      client: this.#client,
      params: { Bucket: this.#bucket, Key: key, Body: createReadStream(localPath), ContentType: contentType },
      partSize: Math.max(PART_BYTES, Math.ceil(size / MAX_PARTS)),
      queueSize: PARTS_IN_FLIGHT,
    });
    await upload.done();
    return { bytes: size };
  }

  async fetch(key: string, localPath: string): Promise<void> {
    const body = await this.#get(key);
    await pipeline(body, createWriteStream(localPath, { mode: 0o600 }));
  }

  async size(key: string): Promise<number | null> {
    checkKey(key);
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (missing(err)) return null;
      throw err;
    }
  }

  async read(key: string, range?: { start: number; end: number }): Promise<NodeJS.ReadableStream> {
    return this.#get(key, range);
  }

  async list(prefix: string): Promise<string[]> {
    const folder = folderPrefix(prefix);
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.#client.send(
        new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: folder, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  }

  async deletePrefix(prefix: string): Promise<number> {
    const keys = await this.list(prefix);
    let removed = 0;
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const out = await this.#client.send(
        new DeleteObjectsCommand({ Bucket: this.#bucket, Delete: { Objects: batch.map((Key) => ({ Key })) } }),
      );
      if (out.Errors?.length) {
        const first = out.Errors[0];
        throw new Error(`${out.Errors.length} of ${batch.length} objects under ${prefix} were not removed (first: ${first?.Key}: ${first?.Code} ${first?.Message})`);
      }
      removed += out.Deleted?.length ?? batch.length;
    }
    return removed;
  }

  async presign(key: string, expiresInSeconds: number, opts: { contentType: string; filename?: string }): Promise<string> {
    checkKey(key);
    if (!Number.isInteger(expiresInSeconds) || expiresInSeconds < 1 || expiresInSeconds > MAX_PRESIGN_SECONDS) {
      throw new RangeError(`a presigned URL lasts 1 to ${MAX_PRESIGN_SECONDS} seconds, not ${expiresInSeconds}`);
    }
    const get = new GetObjectCommand({
      Bucket: this.#bucket,
      Key: key,
      ResponseContentType: opts.contentType,
      ...(opts.filename !== undefined ? { ResponseContentDisposition: attachmentDisposition(opts.filename) } : {}),
    });
    return getSignedUrl(this.#client, get, { expiresIn: expiresInSeconds });
  }

  async #get(key: string, range?: { start: number; end: number }): Promise<Readable> {
    checkKey(key);
    let out: GetObjectCommandOutput;
    try {
      out = await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }),
      );
    } catch (err) {
      if (missing(err)) throw new StorageNotFoundError(key, { cause: err });
      throw err;
    }
    // In Node the body is the response's IncomingMessage (with the SDK's helpers mixed in).
    return out.Body as Readable;
  }
}
