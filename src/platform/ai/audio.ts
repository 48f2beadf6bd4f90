import { spawn } from 'node:child_process';

/** Debian's ffmpeg and ffprobe, from PATH. */
const FFMPEG = 'ffmpeg';
const FFPROBE = 'ffprobe';

export interface RunResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs a program to completion, at the lowest CPU priority when `nice` is set (transcription must never
 * slow a live room down). Rejects with the end of its stderr when it exits non-zero; `signal` kills it.
 */
export function run(cmd: string, args: readonly string[], o: { signal?: AbortSignal | undefined; nice?: boolean } = {}): Promise<RunResult> {
  const [file, argv] = o.nice ? ['nice', ['-n', '19', cmd, ...args]] : [cmd, [...args]];
  return new Promise((resolve, reject) => {
    if (o.signal?.aborted) return reject(o.signal.reason ?? new Error('aborted'));
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const onAbort = () => child.kill('SIGKILL');
    o.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => {
      o.signal?.removeEventListener('abort', onAbort);
      reject(new Error(`${cmd} could not start: ${e.message}`, { cause: e }));
    });
    child.on('close', (code, sig) => {
      o.signal?.removeEventListener('abort', onAbort);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (o.signal?.aborted) return reject(o.signal.reason ?? new Error('aborted'));
      if (code === 0) return resolve({ stdout, stderr });
      const tail = stderr.trim().split('\n').slice(-3).join(' | ');
      reject(new Error(`${cmd} exited with ${code ?? sig}: ${tail}`));
    });
  });
}

/** Converts any audio or video file ffmpeg reads to 16 kHz mono 16-bit PCM WAV, what speech engines take. */
export async function toWav16kMono(input: string, output: string, o: { signal?: AbortSignal | undefined } = {}): Promise<void> {
  await run(FFMPEG, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-i', input, '-vn', '-ac', '1', '-ar', '16000', '-c:a', 'pcm_s16le', '-f', 'wav', output], { signal: o.signal, nice: true });
}

/** The duration of a media file in milliseconds (ffprobe's container duration). */
export async function probeDurationMs(path: string, o: { signal?: AbortSignal | undefined } = {}): Promise<number> {
  const { stdout } = await run(FFPROBE, ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=nw=1:nk=1', path], { signal: o.signal });
  const seconds = Number.parseFloat(stdout.trim());
  if (!Number.isFinite(seconds)) throw new Error(`ffprobe found no duration in ${path}`);
  return Math.round(seconds * 1000);
}

export interface Span {
  startMs: number;
  endMs: number;
}

/** Parses ffmpeg's `silencedetect` report (on stderr) into silences; one still open at the end closes at `durationMs`. */
export function parseSilences(stderr: string, durationMs: number): Span[] {
  const spans: Span[] = [];
  let open: number | null = null;
  for (const m of stderr.matchAll(/silence_(start|end): (-?[\d.]+)/g)) {
    const ms = Math.max(0, Math.round(Number.parseFloat(m[2] ?? '0') * 1000));
    if (m[1] === 'start') open = ms;
    else if (open !== null) {
      spans.push({ startMs: open, endMs: ms });
      open = null;
    }
  }
  if (open !== null && open < durationMs) spans.push({ startMs: open, endMs: durationMs });
  return spans;
}

/** Where the audio is quiet: below `noiseDb` for at least `minSilenceMs`. */
export async function detectSilences(path: string, o: { noiseDb?: number; minSilenceMs?: number; durationMs: number; signal?: AbortSignal | undefined }): Promise<Span[]> {
  const noise = o.noiseDb ?? -35;
  const d = (o.minSilenceMs ?? 400) / 1000;
  const { stderr } = await run(FFMPEG, ['-nostdin', '-hide_banner', '-i', path, '-af', `silencedetect=noise=${noise}dB:d=${d}`, '-f', 'null', '-'], { signal: o.signal, nice: true });
  return parseSilences(stderr, o.durationMs);
}

/**
 * Cuts `durationMs` of audio into chunks of at most `maxChunkMs`, each ending in the middle of the last
 * silence before the limit, so no word is cut in two; where a stretch has no silence, it is cut at the limit.
 */
export function planChunks(durationMs: number, silences: readonly Span[], maxChunkMs: number): Span[] {
  const chunks: Span[] = [];
  let start = 0;
  while (durationMs - start > maxChunkMs) {
    const limit = start + maxChunkMs;
    let cut = limit;
    for (const s of silences) {
      const mid = Math.round((s.startMs + s.endMs) / 2);
      // a cut too near the chunk's start would make a sliver; a quarter of the limit at least
      if (mid > start + maxChunkMs / 4 && mid <= limit) cut = mid;
      else if (s.startMs > start + maxChunkMs / 4 && s.startMs < limit && mid > limit) cut = Math.round((s.startMs + limit) / 2);
    }
    chunks.push({ startMs: start, endMs: cut });
    start = cut;
  }
  chunks.push({ startMs: start, endMs: durationMs });
  return chunks;
}

/** Copies the span `[startMs, endMs)` of a WAV file into a WAV file of its own (16 kHz mono PCM). */
export async function cutWav(input: string, output: string, span: Span, o: { signal?: AbortSignal | undefined } = {}): Promise<void> {
  const args = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-ss', (span.startMs / 1000).toFixed(3), '-t', ((span.endMs - span.startMs) / 1000).toFixed(3), '-i', input, '-ac', '1', '-ar', '16000', '-c:a', 'pcm_s16le', '-f', 'wav', output];
  await run(FFMPEG, args, { signal: o.signal, nice: true });
}

/**
 * The 44-byte header of a mono 16-bit PCM WAV at `rate`; `dataBytes` 0x7fffffff for a stream whose length
 * is not known (a reader takes it as "until the end").
 */
export function wavHeader(rate: number, dataBytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'latin1');
  h.writeUInt32LE(Math.min(0xffffffff, 36 + dataBytes), 4);
  h.write('WAVEfmt ', 8, 'latin1');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'latin1');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}
