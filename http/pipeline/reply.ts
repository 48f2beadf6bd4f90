import { STATUS_CODES } from 'node:http';
import type uws from 'uWebSockets.js';
import type { App } from '../../src/services/app.ts';
import type { AppError } from '../../src/core/errors.ts';
import type { RateLimitResult } from '../../src/platform/cluster/rate-limit.ts';
import type { Reply, RouteSpec } from '../route.ts';
import type { Request } from './request.ts';

// Every write here is made inside the caller's `res.cork`, and only while the request is not aborted.

const STATUS_LINE: Record<number, string> = {};
const statusLine = (s: number): string => (STATUS_LINE[s] ??= `${s} ${STATUS_CODES[s] ?? ''}`.trim());

/** uWS sends the status line with the first header, so the status is always written first. */
function writeLimitHeaders(res: uws.HttpResponse, limit: RateLimitResult | null): void {
  if (!limit) return;
  res.writeHeader('X-RateLimit-Limit', String(limit.limit));
  res.writeHeader('X-RateLimit-Remaining', String(limit.remaining));
  res.writeHeader('X-RateLimit-Reset', String(limit.resetAt));
}

/** Writes a handler's reply: its status, the rate limit and request id headers, its own headers, its body. Returns the status. */
export function sendReply(res: uws.HttpResponse, info: Request, spec: RouteSpec, reply: Reply, limit: RateLimitResult | null): number {
  const status = reply.status ?? spec.status ?? 200;
  res.writeStatus(statusLine(status));
  writeLimitHeaders(res, limit);
  res.writeHeader('X-Request-Id', info.requestId);
  const headers = reply.headers;
  if (headers) for (const k in headers) res.writeHeader(k, headers[k]!);
  if (reply.file) {
    res.writeHeader('Content-Type', reply.file.contentType);
    streamFile(res, info, reply.file);
  } else if (reply.raw) {
    res.writeHeader('Content-Type', reply.raw.contentType);
    res.end(reply.raw.body);
  } else {
    res.writeHeader('Content-Type', 'application/json');
    if (reply.json !== undefined) res.end(reply.json);
    else res.end(JSON.stringify(spec.list ? { data: reply.data, nextCursor: reply.nextCursor ?? null } : { data: reply.data }));
  }
  return status;
}

/**
 * A file's bytes, as they are read, with uWS's backpressure: a chunk the socket cannot take now waits for
 * onWritable, and the stream pauses meanwhile; a client that goes away stops the read. uWS sets
 * Content-Length from `length` (tryEnd's total).
 */
function streamFile(res: uws.HttpResponse, info: Request, file: NonNullable<Reply['file']>): void {
  const { stream, length } = file;
  const stop = () => (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
  info.onAbort = stop;
  if (length === 0) {
    res.endWithoutBody(0);
    stop();
    return;
  }
  stream.on('error', () => {
    if (!info.aborted) res.close();
  });
  stream.on('data', (chunk: Buffer) => {
    if (info.aborted) return stop();
    const ab = chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer;
    const offset = res.getWriteOffset();
    let ok = false;
    let done = false;
    res.cork(() => ([ok, done] = res.tryEnd(ab, length)));
    if (done) return stop();
    if (ok) return;
    stream.pause();
    res.onWritable((at) => {
      let ok2 = false;
      let done2 = false;
      res.cork(() => ([ok2, done2] = res.tryEnd(ab.slice(at - offset), length)));
      if (done2) stop();
      else if (ok2) stream.resume();
      return ok2;
    });
  });
}

export function sendError(app: App, res: uws.HttpResponse, info: Request, err: AppError, limit: RateLimitResult | null = null): void {
  res.writeStatus(statusLine(err.status));
  writeLimitHeaders(res, limit);
  res.writeHeader('X-Request-Id', info.requestId);
  res.writeHeader('Content-Type', 'application/json');
  for (const [k, v] of Object.entries(err.headers)) res.writeHeader(k, v);
  // a 503 is always worth retrying: say when, unless the error said already
  if (err.status === 503 && err.headers['Retry-After'] === undefined) res.writeHeader('Retry-After', '1');
  const close = err.headers.Connection === 'close';
  res.end(JSON.stringify(err.toBody(info.requestId)), close);
  if (app.log.isLevelEnabled('info')) info.logger(app.log).info({ method: info.method, path: info.path, status: err.status, code: err.code }, 'request');
}
