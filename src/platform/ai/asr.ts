import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Config } from '../config.ts';
import { OpenAiTranscriptionEngine, type OpenAiAsrOptions } from './openai-asr.ts';
import { DEBIAN_EN_US_MODEL, PocketSphinxEngine } from './pocketsphinx.ts';
import { TranscriptionError, type TranscriptionEngine } from './transcript.ts';

export { TranscriptionError, transcriptText } from './transcript.ts';
export type { LiveTranscriber, LiveTranscriberOptions, Transcript, TranscriptSegment, TranscriptWord, TranscribeOptions, TranscriptionEngine } from './transcript.ts';

/** Whether `engine` can transcribe `language` (an organization whose language it cannot do gets no job). */
export function supportsLanguage(engine: TranscriptionEngine, language: string): boolean {
  const langs = engine.languages();
  return langs.length === 0 || langs.includes(language.toLowerCase().split('-')[0] ?? '');
}

/** The engine AULA_ASR_ENGINE names, configured from the other AULA_ASR_ settings. */
export function openTranscriptionEngine(
  config: Pick<Config, 'AULA_ASR_ENGINE' | 'AULA_ASR_URL' | 'AULA_ASR_KEY' | 'AULA_ASR_MODEL'>,
  o: { log?: OpenAiAsrOptions['log'] } = {},
): TranscriptionEngine {
  if (config.AULA_ASR_ENGINE === 'openai') {
    if (!config.AULA_ASR_URL) throw new TranscriptionError('AULA_ASR_ENGINE=openai needs AULA_ASR_URL');
    return new OpenAiTranscriptionEngine({ url: config.AULA_ASR_URL, model: config.AULA_ASR_MODEL, ...(config.AULA_ASR_KEY ? { key: config.AULA_ASR_KEY } : {}), ...(o.log ? { log: o.log } : {}) });
  }
  return new PocketSphinxEngine();
}

/**
 * Why the engine AULA_ASR_ENGINE names cannot run on this machine (the offline engine's program or model
 * is not installed); null when it can. Such a server queues no transcripts, and the console says why.
 */
export function transcriptionMissing(config: Pick<Config, 'AULA_ASR_ENGINE'>, env: NodeJS.ProcessEnv = process.env): string | null {
  if (config.AULA_ASR_ENGINE !== 'pocketsphinx') return null;
  const onPath = (env.PATH ?? '').split(delimiter).some((d) => d && existsSync(join(d, 'pocketsphinx_continuous')));
  if (!onPath) return 'pocketsphinx_continuous is not installed (Debian package pocketsphinx)';
  if (!existsSync(join(DEBIAN_EN_US_MODEL, 'en-us', 'mdef'))) return `the English model is not at ${DEBIAN_EN_US_MODEL} (Debian package pocketsphinx-en-us)`;
  return null;
}
