import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Consumer } from 'mediasoup/node/lib/Consumer.js';
import type { PlainTransport } from 'mediasoup/node/lib/PlainTransport.js';
import type { Producer } from 'mediasoup/node/lib/Producer.js';
import type { Router } from 'mediasoup/node/lib/Router.js';
import type { Logger } from '../../src/platform/logger.ts';
import { transcriptText, type LiveTranscriber, type TranscriptionEngine } from '../../src/platform/ai/asr.ts';
import { OggOpusWriter, opusSamples } from '../recording/containers.ts';
import { recorderCapabilities } from '../recording/recorder.ts';
import { parseRtp } from '../recording/rtp.ts';
import { CAPTION_RATE, Chunker, wavFile, type AudioChunk, type ChunkerOptions } from './chunker.ts';

/**
 * A room's live captions on its media node (docs/ai-notes.md, "Live captions"): while someone in the
 * room has CC on, one audio consumer of the current speaker's microphone on a PlainTransport sends its
 * RTP to one UDP socket of this process; the Opus packets go as Ogg (a page per packet) into one
 * ffmpeg that decodes them to 16 kHz PCM; the PCM is cut into short chunks at quiet moments
 * (chunker.ts), and each chunk is transcribed by the configured engine: written to its live recognizer
 * when it has one (PocketSphinx: one decoder process for the room, its model loaded once), or as a file,
 * one at a time (the OpenAI-compatible server); each text is handed to `onCaption` with who said it.
 * Nothing is written anywhere but a chunk's WAV in a temporary folder, removed once it is read.
 */

export interface Caption {
  participantId: string;
  name: string;
  text: string;
  /** Wall-clock ms when the chunk's audio began. */
  at: number;
  /** When the audio's end arrived (the caption's delay is measured from here). */
  endAt: number;
}

export interface CaptionPipelineOptions {
  router: Router;
  engine: TranscriptionEngine;
  language: string;
  log: Logger;
  onCaption(c: Caption): void;
  chunks?: ChunkerOptions;
}

/** Chunks waiting for the engine beyond this are dropped, oldest first (an engine slower than speech). */
const MAX_WAITING = 2;
/** A live recognizer further behind than this gets no new chunk until it catches up (about MAX_WAITING chunks). */
const MAX_BEHIND_SECONDS = 4;
/** No audio this long from the speaker ends the chunk under way. */
const IDLE_FLUSH_MS = 300;

interface Speaker {
  participantId: string;
  name: string;
}

export class CaptionPipeline {
  readonly #o: CaptionPipelineOptions;
  readonly #transport: PlainTransport;
  readonly #socket: Socket;
  readonly #ffmpeg: ChildProcessWithoutNullStreams;
  readonly #ogg: OggOpusWriter;
  readonly #chunker: Chunker;
  readonly #abort = new AbortController();
  readonly #dir: Promise<string>;
  #consumer: Consumer | null = null;
  #producerId: string | null = null;
  #ssrc = -1;
  #payloadType = -1;
  #speaker: Speaker | null = null;
  /** Who spoke in the chunk under way. */
  #chunkSpeaker: Speaker | null = null;
  #waiting: { chunk: AudioChunk; speaker: Speaker }[] = [];
  /** The engine's live recognizer, when it has one (opened at the first chunk, again if it stops), and its pieces' speakers and times. */
  #live: LiveTranscriber | null = null;
  #pieces = new Map<number, { speaker: Speaker; startAt: number; endAt: number }>();
  #busy = false;
  #lastPcm = 0;
  #idleTimer: NodeJS.Timeout;
  #stopped = false;
  /** Chunks transcribed, and dropped because the engine lagged (for the logs and tests). */
  transcribed = 0;
  dropped = 0;
  /** Time the engine took, and time from a chunk's last audio arriving to its caption, summed over the chunks transcribed. */
  engineMs = 0;
  afterAudioMs = 0;

  private constructor(o: CaptionPipelineOptions, transport: PlainTransport, socket: Socket) {
    this.#o = o;
    this.#transport = transport;
    this.#socket = socket;
    this.#dir = mkdtemp(join(tmpdir(), 'aula-captions-'));
    this.#dir.catch(() => {});
    this.#ffmpeg = spawn('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-fflags', 'nobuffer', '-probesize', '32', '-analyzeduration', '0', '-f', 'ogg', '-i', 'pipe:0', '-ac', '1', '-ar', String(CAPTION_RATE), '-f', 's16le', '-flush_packets', '1', 'pipe:1'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#ffmpeg.on('error', (err) => o.log.warn({ err }, 'captions: ffmpeg could not start'));
    this.#ffmpeg.stdin.on('error', () => {});
    this.#ffmpeg.stderr.on('data', (b: Buffer) => o.log.debug({ stderr: String(b).trim() }, 'captions: ffmpeg'));
    let odd: Buffer | null = null;
    this.#ffmpeg.stdout.on('data', (b: Buffer) => {
      if (odd) {
        b = Buffer.concat([odd, b]);
        odd = null;
      }
      if (b.length & 1) {
        odd = b.subarray(b.length - 1);
        b = b.subarray(0, b.length - 1);
      }
      const copy = Buffer.from(b);
      this.#lastPcm = Date.now();
      this.#chunker.push(new Int16Array(copy.buffer, copy.byteOffset, copy.length / 2), this.#lastPcm);
    });
    // a page per packet: ffmpeg sees each 20 ms as it comes
    this.#ogg = new OggOpusWriter((page) => {
      if (!this.#stopped) this.#ffmpeg.stdin.write(page);
    }, 1, 0x43415054, 1);
    this.#chunker = new Chunker((chunk) => this.#queue(chunk), o.chunks);
    socket.on('message', (packet) => this.#receive(packet));
    this.#idleTimer = setInterval(() => {
      if (this.#lastPcm && Date.now() - this.#lastPcm > IDLE_FLUSH_MS) {
        this.#lastPcm = 0;
        this.#chunker.flush();
      }
    }, 100);
    this.#idleTimer.unref();
  }

  static async start(o: CaptionPipelineOptions): Promise<CaptionPipeline> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    const transport = await o.router.createPlainTransport({ listenIp: '127.0.0.1', rtcpMux: true, comedia: false, appData: { captions: true } });
    await transport.connect({ ip: '127.0.0.1', port: socket.address().port });
    return new CaptionPipeline(o, transport, socket);
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** The microphone followed now (null: none). */
  get following(): string | null {
    return this.#speaker?.participantId ?? null;
  }

  /** Follows this microphone from now: the chunk under way is ended and belongs to whoever spoke it. */
  async follow(mic: { producer: Producer; participantId: string; name: string } | null): Promise<void> {
    if (this.#stopped || (mic?.producer.id ?? null) === this.#producerId) return;
    this.#chunker.flush();
    this.#consumer?.close();
    this.#consumer = null;
    this.#ssrc = -1;
    this.#producerId = mic?.producer.id ?? null;
    this.#speaker = mic ? { participantId: mic.participantId, name: mic.name } : null;
    if (!mic || mic.producer.closed) return;
    const consumer = await this.#transport.consume({ producerId: mic.producer.id, rtpCapabilities: recorderCapabilities(this.#o.router.rtpCapabilities), appData: { captions: true } }).catch((err: Error) => {
      this.#o.log.warn({ err }, 'captions: could not consume the speaker\'s microphone');
      return null;
    });
    if (!consumer) return;
    if (this.#stopped || this.#producerId !== mic.producer.id) {
      consumer.close();
      return;
    }
    this.#consumer = consumer;
    this.#payloadType = consumer.rtpParameters.codecs[0]!.payloadType;
    this.#ssrc = consumer.rtpParameters.encodings?.[0]?.ssrc ?? -1;
  }

  #receive(packet: Buffer): void {
    const p = parseRtp(packet);
    if (!p || p.ssrc !== this.#ssrc || p.payloadType !== this.#payloadType || this.#stopped) return;
    const samples = opusSamples(p.payload);
    if (!samples) return;
    if (!this.#chunkSpeaker || this.#chunkSpeaker.participantId !== this.#speaker?.participantId) this.#chunkSpeaker = this.#speaker;
    this.#ogg.packet(Buffer.from(p.payload), samples);
  }

  #queue(chunk: AudioChunk): void {
    const speaker = this.#chunkSpeaker ?? this.#speaker;
    if (!speaker || this.#stopped) return;
    if (this.#o.engine.live) {
      this.#writeLive(chunk, speaker);
      return;
    }
    this.#waiting.push({ chunk, speaker });
    while (this.#waiting.length > MAX_WAITING) {
      this.#waiting.shift();
      this.dropped++;
    }
    void this.#next();
  }

  /** To the live recognizer: the chunk is written now and its text comes when the engine has it. */
  #writeLive(chunk: AudioChunk, speaker: Speaker): void {
    try {
      this.#live ??= this.#openLive();
    } catch (err) {
      this.#o.log.warn({ err }, 'captions: the live recognizer could not start');
      return;
    }
    if (this.#live.behindSeconds > MAX_BEHIND_SECONDS) {
      this.dropped++;
      return;
    }
    const endAt = chunk.startAt + (chunk.samples.length / CAPTION_RATE) * 1000;
    this.#pieces.set(this.#live.write(chunk.samples), { speaker, startAt: chunk.startAt, endAt });
  }

  #openLive(): LiveTranscriber {
    const live = this.#o.engine.live!({
      language: this.#o.language,
      onText: (n, text) => {
        const piece = this.#pieces.get(n);
        if (!piece || this.#stopped || this.#live !== live) return;
        for (const k of this.#pieces.keys()) if (k < n) this.#pieces.delete(k);
        this.transcribed++;
        this.afterAudioMs += Date.now() - piece.endAt;
        this.#o.onCaption({ ...piece.speaker, text, at: piece.startAt, endAt: piece.endAt });
      },
      onClose: (err) => {
        if (this.#live !== live) return;
        if (!this.#stopped) this.#o.log.warn({ err }, 'captions: the live recognizer stopped; the next chunk opens another');
        this.#live = null;
        this.#pieces.clear();
      },
    });
    return live;
  }

  async #next(): Promise<void> {
    if (this.#busy || this.#stopped) return;
    const job = this.#waiting.shift();
    if (!job) return;
    this.#busy = true;
    const endAt = job.chunk.startAt + (job.chunk.samples.length / CAPTION_RATE) * 1000;
    const path = join(await this.#dir, `c${this.transcribed + this.dropped}-${Date.now()}.wav`);
    try {
      await writeFile(path, wavFile(job.chunk.samples));
      const began = Date.now();
      const t = await this.#o.engine.transcribe(path, { language: this.#o.language, signal: this.#abort.signal });
      this.transcribed++;
      this.engineMs += Date.now() - began;
      this.afterAudioMs += Date.now() - endAt;
      const text = transcriptText(t).trim();
      if (text && !this.#stopped) this.#o.onCaption({ ...job.speaker, text, at: job.chunk.startAt, endAt });
    } catch (err) {
      if (!this.#stopped) this.#o.log.warn({ err }, 'captions: a chunk could not be transcribed');
    } finally {
      await rm(path, { force: true }).catch(() => {});
      this.#busy = false;
      void this.#next();
    }
  }

  /** Stops everything: the consumer and transport, ffmpeg, the chunk being transcribed. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#idleTimer);
    this.#abort.abort(new Error('captions stopped'));
    this.#waiting = [];
    this.#live?.close();
    this.#live = null;
    this.#consumer?.close();
    this.#transport.close();
    this.#socket.close();
    this.#ffmpeg.stdin.end();
    this.#ffmpeg.kill('SIGKILL');
    await rm(await this.#dir.catch(() => ''), { recursive: true, force: true }).catch(() => {});
  }

  /** The live recognizer's process group, while it runs one (for measures). */
  get recognizerGroup(): number | undefined {
    return this.#live?.processGroup;
  }

  /** The ffmpeg decoding this room's speech (its pid, for measures). */
  get pid(): number | undefined {
    return this.#ffmpeg.pid;
  }
}
