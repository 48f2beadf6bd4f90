/**
 * Lecture notes of a recorded class (issue 27): the engine interface and the choice of engine by
 * configuration. `extractive` (the default) needs no model and no network; `openai` asks any
 * OpenAI-compatible chat endpoint and falls back to the extractive notes when the answer is unusable.
 */
import { ExtractiveNotesEngine } from './notes-extractive.ts';
import { OpenAiNotesEngine, type OpenAiNotesSettings } from './notes-openai.ts';
import type { NotesEngine } from './notes-schema.ts';

export * from './notes-schema.ts';
export { ExtractiveNotesEngine, extractiveNotes } from './notes-extractive.ts';
export { NotesEngineError, OpenAiNotesEngine, type OpenAiNotesSettings } from './notes-openai.ts';

export interface NotesEngineSettings {
  engine: 'extractive' | 'openai';
  url?: string | undefined;
  key?: string | undefined;
  model?: string | undefined;
  /** Told why a model's answer was replaced by the offline notes. */
  onFallback?: (reason: string) => void;
  /** Tuning of the openai engine (timeouts, retries, the transcript's share of the prompt). */
  openai?: Omit<OpenAiNotesSettings, 'url' | 'key' | 'model' | 'onFallback'>;
}

export function openNotesEngine(settings: NotesEngineSettings): NotesEngine {
  if (settings.engine === 'extractive') return new ExtractiveNotesEngine();
  if (!settings.url || !settings.model) throw new Error('the openai notes engine needs a URL and a model (AULA_NOTES_URL, AULA_NOTES_MODEL)');
  return new OpenAiNotesEngine({
    ...settings.openai,
    url: settings.url,
    key: settings.key,
    model: settings.model,
    ...(settings.onFallback ? { onFallback: settings.onFallback } : {}),
  });
}
