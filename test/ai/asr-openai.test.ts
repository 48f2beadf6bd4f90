import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openTranscriptionEngine, TranscriptionError } from '../../src/platform/ai/asr.ts';
import { detectSilences, probeDurationMs } from '../../src/platform/ai/audio.ts';
import { OpenAiTranscriptionEngine, type OpenAiAsrOptions } from '../../src/platform/ai/openai-asr.ts';
import { PocketSphinxEngine } from '../../src/platform/ai/pocketsphinx.ts';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';
import { concatWithSilences, speak } from './speech.ts';

const KEY = 'sk-test-0123456789abcdef-secret';
const dir = mkdtempSync(join(tmpdir(), 'aula-asr-openai-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const clip = speak('Plants use sunlight to make sugar.', join(dir, 'short.wav'));

interface Received {
  path: string;
  authorization: string | undefined;
  fields: Record<string, string>;
  file: { name: string; type: string; bytes: Buffer } | null;
}

/** A server that speaks /v1/audio/transcriptions: `answer` decides each reply from what was received and its index. */
async function apiServer(t: Test, answer: (r: Received, n: number, res: ServerResponse) => void | Promise<void>) {
  const received: Received[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = await new Response(Buffer.concat(chunks), { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
    const fields: Record<string, string> = {};
    let file: Received['file'] = null;
    for (const [k, v] of form.entries()) {
      if (typeof v === 'string') fields[k] = v;
      else file = { name: v.name, type: v.type, bytes: Buffer.from(await v.arrayBuffer()) };
    }
    const r: Received = { path: req.url ?? '', authorization: req.headers.authorization, fields, file };
    received.push(r);
    await answer(r, received.length - 1, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { url, received, engine: (o: Partial<OpenAiAsrOptions> = {}) => new OpenAiTranscriptionEngine({ url, key: KEY, model: 'whisper-test', backoffMs: 10, ...o }) };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
/** Milliseconds of 16 kHz mono 16-bit audio in a WAV upload. */
const wavMs = (bytes: Buffer) => Math.round(((bytes.length - 78) / 32));

t.test('OpenAiTranscriptionEngine.transcribe() posts multipart (file, model, verbose_json, language) with the key and reads verbose_json', async (t) => {
  const api = await apiServer(t, (_r, _n, res) => json(res, 200, {
    task: 'transcribe', language: 'english', duration: 2.1, text: 'Plants use sunlight to make sugar.',
    segments: [{ id: 0, start: 0.1, end: 1.2, text: ' Plants use sunlight' }, { id: 1, start: 1.2, end: 99, text: ' to make sugar.' }],
    words: [{ word: 'Plants', start: 0.1, end: 0.4 }, { word: 'sugar', start: 1.5, end: 1.9 }],
  }));
  const out = await api.engine().transcribe(clip, { language: 'en' });
  const [r] = api.received;
  t.equal(r?.path, '/v1/audio/transcriptions');
  t.equal(r?.authorization, `Bearer ${KEY}`);
  t.match(r?.fields, { model: 'whisper-test', response_format: 'verbose_json', language: 'en', 'timestamp_granularities[]': 'segment' });
  t.equal(r?.file?.name, 'audio.wav');
  t.equal(r?.file?.type, 'audio/wav');
  const wav = r!.file!.bytes;
  t.equal(wav.subarray(0, 4).toString(), 'RIFF');
  t.equal(wav.readUInt16LE(22), 1, 'mono');
  t.equal(wav.readUInt32LE(24), 16000, '16 kHz');
  const duration = await probeDurationMs(clip);
  t.equal(out.durationMs, duration);
  t.equal(out.language, 'en', 'the language asked for, not the server\'s name for it');
  t.same(out.segments.map((s) => [s.startMs, s.endMs, s.text]), [[100, 1200, 'Plants use sunlight'], [1200, duration, 'to make sugar.']], 'times in ms, kept inside the audio');
  t.same(out.segments[0]?.words, [{ word: 'Plants', startMs: 100, endMs: 400 }]);
  t.same(out.segments[1]?.words, [{ word: 'sugar', startMs: 1500, endMs: 1900 }]);
});

t.test('a server that answers plain json (no segments): the text as one segment', async (t) => {
  const api = await apiServer(t, (_r, _n, res) => json(res, 200, { text: ' Plants use sunlight. ' }));
  const out = await api.engine().transcribe(clip, { language: 'en' });
  t.same(out.segments, [{ startMs: 0, endMs: out.durationMs, text: 'Plants use sunlight.' }]);
});

t.test('long audio is cut at silences into chunks under the limit and stitched with their offsets', async (t) => {
  const sentences = ['Good morning everyone.', 'Today we learn about plants.', 'Plants need water and light.', 'The roots hold the plant.', 'See you tomorrow.'];
  const long = concatWithSilences(sentences.map((s, i) => speak(s, join(dir, `s${i}.wav`))), 1500, join(dir, 'long.wav'));
  const api = await apiServer(t, (r, n, res) => {
    const ms = wavMs(r.file!.bytes);
    json(res, 200, { text: `chunk ${n}`, duration: ms / 1000, segments: [{ start: 0, end: ms / 1000, text: `chunk ${n}` }] });
  });
  const out = await api.engine({ maxChunkMs: 6000 }).transcribe(long, { language: 'en' });
  t.ok(api.received.length >= 3, `${api.received.length} chunks`);
  t.same(out.segments.map((s) => s.text), api.received.map((_r, i) => `chunk ${i}`), 'in order');
  let at = 0;
  const silences = await detectSilences(long, { durationMs: out.durationMs });
  for (const [i, s] of out.segments.entries()) {
    t.ok(Math.abs(s.startMs - at) <= 40, `chunk ${i} starts where the one before ended (${s.startMs} ~ ${at})`);
    t.ok(s.endMs - s.startMs <= 6000 + 40, `chunk ${i} is under the limit (${s.endMs - s.startMs} ms)`);
    if (i < out.segments.length - 1) t.ok(silences.some((q) => s.endMs >= q.startMs && s.endMs <= q.endMs), `chunk ${i} ends in a silence (${s.endMs} ms)`);
    at = s.endMs;
  }
  t.ok(Math.abs(at - out.durationMs) <= 40, 'the last chunk ends with the audio');
});

t.test('429 with Retry-After: waits that long, then succeeds', async (t) => {
  const api = await apiServer(t, (_r, n, res) => n === 0 ? json(res, 429, { error: { message: 'slow down' } }, { 'retry-after': '1' }) : json(res, 200, { text: 'ok', segments: [{ start: 0, end: 1, text: 'ok' }] }));
  const warnings: object[] = [];
  const t0 = Date.now();
  const out = await api.engine({ log: { warn: (o) => warnings.push(o) } }).transcribe(clip, { language: 'en' });
  t.ok(Date.now() - t0 >= 950, `waited ${Date.now() - t0} ms`);
  t.equal(api.received.length, 2);
  t.equal(out.segments[0]?.text, 'ok');
  t.match(warnings, [{ attempt: 1, waitMs: 1000, reason: /^429/ }]);
  t.notOk(JSON.stringify(warnings).includes(KEY), 'no key in the log');
});

t.test('5xx: retried with backoff, then gives up with a clear error that holds no key', async (t) => {
  const api = await apiServer(t, (_r, _n, res) => json(res, 503, { error: `upstream down, your key ${KEY} is fine` }));
  const err = await api.engine({ retries: 2 }).transcribe(clip, { language: 'en' }).catch((e: unknown) => e);
  t.type(err, TranscriptionError);
  t.match((err as TranscriptionError).message, /transcription server at http:\/\/127\.0\.0\.1:\d+\/v1\/audio\/transcriptions failed, gave up after 3 attempts: 503/);
  t.equal((err as TranscriptionError).retryable, true);
  t.equal(api.received.length, 3);
  t.notOk(String((err as Error).message).includes(KEY), 'the key is not in the message');
  t.ok((err as Error).message.includes('[redacted]'), 'an echoed key is redacted');
});

t.test('4xx other than 429: no retry, the server\'s reason, no key', async (t) => {
  const api = await apiServer(t, (_r, _n, res) => json(res, 401, { error: { message: `Incorrect API key provided: ${KEY}` } }));
  const err = await api.engine().transcribe(clip, { language: 'en' }).catch((e: unknown) => e) as TranscriptionError;
  t.equal(api.received.length, 1);
  t.match(err.message, /refused the audio: HTTP 401: .*Incorrect API key provided: \[redacted\]/);
  t.equal(err.retryable, false);
  t.notOk(err.message.includes(KEY) || String(err.stack).includes(KEY));
});

t.test('a server that does not answer in time: each attempt times out, then a clear error', async (t) => {
  const api = await apiServer(t, () => { /* never answers */ });
  const t0 = Date.now();
  const err = await api.engine({ timeoutMs: 300, retries: 1 }).transcribe(clip, { language: 'en' }).catch((e: unknown) => e) as TranscriptionError;
  t.match(err.message, /gave up after 2 attempts: no answer within 300 ms/);
  t.equal(api.received.length, 2);
  t.ok(Date.now() - t0 < 5000);
  t.notOk(err.message.includes(KEY));
});

t.test('a connection refused: retried, then a clear error; an abort stops at once', async (t) => {
  const engine = new OpenAiTranscriptionEngine({ url: 'http://127.0.0.1:9/v1', key: KEY, model: 'm', retries: 1, backoffMs: 10 });
  const err = await engine.transcribe(clip, { language: 'en' }).catch((e: unknown) => e) as TranscriptionError;
  t.match(err.message, /gave up after 2 attempts: connection failed/);
  t.notOk(err.message.includes(KEY));
  const api = await apiServer(t, () => { /* never answers */ });
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error('recording deleted')), 200);
  await t.rejects(api.engine({ timeoutMs: 60_000 }).transcribe(clip, { language: 'en', signal: ac.signal }), /recording deleted/);
});

t.test('openTranscriptionEngine() follows AULA_ASR_ENGINE; the openai engine needs AULA_ASR_URL', async (t) => {
  t.type(openTranscriptionEngine(loadConfig({})), PocketSphinxEngine);
  t.same(openTranscriptionEngine(loadConfig({})).languages(), ['en']);
  const config = loadConfig({ AULA_ASR_ENGINE: 'openai', AULA_ASR_URL: 'https://asr.example/v1', AULA_ASR_KEY: KEY, AULA_ASR_MODEL: 'whisper-large-v3' });
  const engine = openTranscriptionEngine(config);
  t.type(engine, OpenAiTranscriptionEngine);
  t.same(engine.languages(), [], 'any language: the server decides');
  t.notOk(JSON.stringify(engine).includes(KEY) || String(engine).includes(KEY), 'the key is a private field');
  t.throws(() => loadConfig({ AULA_ASR_ENGINE: 'openai' }), new ConfigError('invalid configuration:\n  AULA_ASR_URL: required when AULA_ASR_ENGINE=openai'));
  t.throws(() => loadConfig({ AULA_NOTES_ENGINE: 'openai' }), new ConfigError('invalid configuration:\n  AULA_NOTES_URL: required when AULA_NOTES_ENGINE=openai'));
  t.throws(() => loadConfig({ AULA_ASR_ENGINE: 'whisper' }), /AULA_ASR_ENGINE/);
  t.throws(() => loadConfig({ AULA_ASR_ENGINE: 'openai', AULA_ASR_URL: 'ftp://x' }), /AULA_ASR_URL: must be an http/);
  const defaults = loadConfig({});
  t.match(defaults, { AULA_ASR_ENGINE: 'pocketsphinx', AULA_NOTES_ENGINE: 'extractive' });
  t.equal(loadConfig({ AULA_NOTES_ENGINE: 'openai', AULA_NOTES_URL: 'http://127.0.0.1:8000/v1', AULA_NOTES_KEY: 'k' }).AULA_NOTES_KEY, 'k');
});
