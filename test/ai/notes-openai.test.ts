import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extractiveNotes, NotesEngineError, OpenAiNotesEngine, openNotesEngine, type LectureNotes, type OpenAiNotesSettings } from '../../src/platform/ai/notes.ts';
import { promptTranscript, retryAfterMs } from '../../src/platform/ai/notes-openai.ts';
import { longLecture, shortClip } from './notes-fixtures.ts';

const KEY = 'sk-test-0123456789abcdef-secret';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: any;
}

type Reply = (res: ServerResponse, seen: Seen) => void;

/** A chat completions endpoint on port 0 that answers each request with the next reply in line. */
async function fakeApi(t: Test, replies: Reply[]) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const s: Seen = { method: req.method!, url: req.url!, headers: req.headers, body: raw ? JSON.parse(raw) : null };
      seen.push(s);
      const reply = replies.shift() ?? ((r) => r.writeHead(500).end('no reply left'));
      reply(res, s);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => (res) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
};
const answer = (content: string): Reply => json(200, { id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] });

const goodNotes: LectureNotes = {
  summary: {
    overview: 'The class explained how plants turn sunlight into sugar through photosynthesis.',
    bullets: ['Photosynthesis makes sugar and oxygen.', 'Chlorophyll absorbs light.', 'Without sunlight there is no sugar.'],
  },
  chapters: [
    { title: 'Plants and food', startSeconds: 0 },
    { title: 'Chlorophyll', startSeconds: 12 },
  ],
  quiz: [
    { question: 'What absorbs the light in a leaf?', answer: 'Chlorophyll', options: ['Chlorophyll', 'Oxygen', 'Sugar'] },
    { question: 'What does photosynthesis produce?', answer: 'Sugar and oxygen' },
  ],
};

function engine(url: string, more: Partial<OpenAiNotesSettings> = {}) {
  const sleeps: number[] = [];
  const fallbacks: string[] = [];
  const e = new OpenAiNotesEngine({
    url,
    key: KEY,
    model: 'notes-model',
    backoffMs: 10,
    sleep: async (ms) => void sleeps.push(ms),
    onFallback: (why) => void fallbacks.push(why),
    ...more,
  });
  return { e, sleeps, fallbacks };
}

t.test('OpenAiNotesEngine.notes() posts the model, the messages and the key, and returns a valid answer', async (t) => {
  const api = await fakeApi(t, [answer(JSON.stringify(goodNotes))]);
  const { e, fallbacks } = engine(`${api.url}/v1`);
  t.same(await e.notes(shortClip, { language: 'en' }), goodNotes);
  t.same(fallbacks, []);
  const [req] = api.seen;
  t.equal(req!.method, 'POST');
  t.equal(req!.url, '/v1/chat/completions');
  t.equal(req!.headers.authorization, `Bearer ${KEY}`);
  t.match(req!.headers['content-type'], /application\/json/);
  t.equal(req!.body.model, 'notes-model');
  t.same(req!.body.response_format, { type: 'json_object' });
  t.same(req!.body.messages.map((m: { role: string }) => m.role), ['system', 'user']);
  t.match(req!.body.messages[0].content, /JSON/);
  t.match(req!.body.messages[0].content, /"en"/);
  t.match(req!.body.messages[1].content, /\[00:06\] Teacher: Photosynthesis turns sunlight/);
});

t.test('OpenAiNotesEngine: a base URL without /v1, and no key: no Authorization header', async (t) => {
  const api = await fakeApi(t, [answer('```json\n' + JSON.stringify(goodNotes) + '\n```')]);
  const { e } = engine(api.url, { key: undefined });
  t.same(await e.notes(shortClip, { language: 'en' }), goodNotes, 'a fenced answer is read too');
  t.equal(api.seen[0]!.url, '/v1/chat/completions');
  t.notOk('authorization' in api.seen[0]!.headers);
});

t.test('OpenAiNotesEngine: a 429 waits for its Retry-After, then succeeds', async (t) => {
  const api = await fakeApi(t, [json(429, { error: { message: 'rate limited' } }, { 'retry-after': '2' }), answer(JSON.stringify(goodNotes))]);
  const { e, sleeps } = engine(api.url);
  t.same(await e.notes(shortClip, { language: 'en' }), goodNotes);
  t.equal(api.seen.length, 2);
  t.same(sleeps, [2000]);
});

t.test('retryAfterMs() reads seconds and HTTP dates', async (t) => {
  const now = Date.parse('2026-11-26T18:00:00Z');
  t.equal(retryAfterMs('3', now), 3000);
  t.equal(retryAfterMs('0', now), 0);
  t.equal(retryAfterMs('Thu, 26 Nov 2026 18:00:05 GMT', now), 5000);
  t.equal(retryAfterMs('Thu, 26 Nov 2026 17:00:00 GMT', now), 0, 'a date past is now');
  t.equal(retryAfterMs(null, now), null);
  t.equal(retryAfterMs('soon', now), null);
});

t.test('OpenAiNotesEngine: 5xx answers are retried with a growing backoff; past the retries it throws', async (t) => {
  const api = await fakeApi(t, [json(500, {}), json(503, {}), answer(JSON.stringify(goodNotes))]);
  const { e, sleeps } = engine(api.url);
  t.same(await e.notes(shortClip, { language: 'en' }), goodNotes);
  t.same(sleeps, [10, 20]);

  const down = await fakeApi(t, [json(502, {}), json(502, {}), json(502, {})]);
  const { e: e2, sleeps: sleeps2, fallbacks } = engine(down.url, { retries: 2 });
  await t.rejects(e2.notes(shortClip, { language: 'en' }), { name: 'NotesEngineError', status: 502, retryable: true, message: /HTTP 502/ });
  t.equal(down.seen.length, 3);
  t.same(sleeps2, [10, 20]);
  t.same(fallbacks, [], 'a failing engine is an error, not offline notes');
});

t.test('OpenAiNotesEngine: an answer that does not parse or fit the schema gives the offline notes', async (t) => {
  const offline = extractiveNotes(shortClip);
  const bad: Reply[] = [
    answer('Here are your notes: the class was about plants.'),
    answer(JSON.stringify({ summary: { overview: 'x'.repeat(1001), bullets: ['a', 'b', 'c'] }, chapters: [{ title: 'A', startSeconds: 0 }], quiz: [] })),
    answer(JSON.stringify({ ...goodNotes, chapters: [] })),
    answer(JSON.stringify({ ...goodNotes, quiz: [{ question: 'Q?', answer: 'A', options: ['B', 'C'] }] })),
    json(200, { choices: [] }),
    (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices": [ {"mess'),
  ];
  const api = await fakeApi(t, [...bad]);
  const { e, fallbacks } = engine(api.url);
  for (let i = 0; i < bad.length; i++) t.same(await e.notes(shortClip, { language: 'en' }), offline, `bad answer ${i + 1}: the offline notes`);
  t.equal(fallbacks.length, bad.length);
  t.match(fallbacks[0], /not JSON/);
  t.match(fallbacks[1], /schema.*overview/);
  t.equal(api.seen.length, bad.length, 'a bad answer is not asked again');
});

t.test('OpenAiNotesEngine: chapters out of order or past the end are tidied, not refused', async (t) => {
  const api = await fakeApi(t, [
    answer(JSON.stringify({ ...goodNotes, chapters: [{ title: 'Chlorophyll', startSeconds: 12.6 }, { title: 'Plants and food', startSeconds: 0 }, { title: 'After', startSeconds: 999 }] })),
  ]);
  const { e, fallbacks } = engine(api.url);
  const notes = await e.notes(shortClip, { language: 'en' });
  t.same(notes.chapters, goodNotes.chapters);
  t.same(fallbacks, []);
});

t.test('OpenAiNotesEngine: the key is in no error message, whatever the endpoint echoes', async (t) => {
  const api = await fakeApi(t, [(res, seen) => res.writeHead(401, { 'content-type': 'text/plain' }).end(`invalid key: ${seen.headers.authorization}`)]);
  const { e } = engine(api.url.replace('http://', `http://user:${KEY}@`));
  const err = await e.notes(shortClip, { language: 'en' }).catch((x: unknown) => x);
  t.ok(err instanceof NotesEngineError);
  t.equal((err as NotesEngineError).status, 401);
  t.equal((err as NotesEngineError).retryable, false);
  t.equal(api.seen.length, 1, 'a 401 is not retried');
  t.notMatch(String((err as Error).message), KEY);
  t.notMatch(String((err as Error).stack), KEY);
  t.match((err as Error).message, /\[redacted\]/);

  // Nobody listening: the network error says where, not with what.
  const { e: nowhere } = engine(`http://127.0.0.1:1`, { retries: 1 });
  const err2 = await nowhere.notes(shortClip, { language: 'en' }).catch((x: unknown) => x);
  t.ok(err2 instanceof NotesEngineError);
  t.notMatch(JSON.stringify({ message: (err2 as Error).message, stack: (err2 as Error).stack }), KEY);

  const fallbacks: string[] = [];
  const echo = await fakeApi(t, [answer(`not json, but the key: ${KEY}`)]);
  const { e: e3 } = engine(echo.url, { onFallback: (why) => void fallbacks.push(why) });
  await e3.notes(shortClip, { language: 'en' });
  t.notMatch(fallbacks.join(' '), KEY);
});

t.test('OpenAiNotesEngine: a request unanswered within the timeout fails; an aborted job stops at once', async (t) => {
  const api = await fakeApi(t, [() => {}, () => {}]);
  const { e } = engine(api.url, { timeoutMs: 100, retries: 1 });
  await t.rejects(e.notes(shortClip, { language: 'en' }), { name: 'NotesEngineError', retryable: true, message: /no answer within 100 ms/ });
  t.equal(api.seen.length, 2);

  const hung = await fakeApi(t, [() => {}]);
  const { e: e2 } = engine(hung.url, { timeoutMs: 10_000 });
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error('job cancelled')), 50);
  await t.rejects(e2.notes(shortClip, { language: 'en', signal: controller.signal }), { message: 'job cancelled' });
  t.equal(hung.seen.length, 1);
});

t.test('promptTranscript() keeps the start of each part of a class too long for the budget', async (t) => {
  const lecture = longLecture();
  const whole = promptTranscript(lecture, 1_000_000);
  t.ok(whole.length > 20_000);
  t.notMatch(whole, /\[…\]/);
  const cut = promptTranscript(lecture, 6_000);
  t.ok(cut.length <= 6_000, `${cut.length} characters`);
  for (const mark of ['[00:00]', '[05:00]', '[10:00]', '[15:00]', '[20:00]', '[25:00]']) t.ok(cut.includes(mark), `${mark} kept`);
  t.match(cut, /\[…\]/);
});

t.test('OpenAiNotesEngine: a long class goes out within the configured budget', async (t) => {
  const api = await fakeApi(t, [answer(JSON.stringify({ ...goodNotes, chapters: [{ title: 'Plants', startSeconds: 0 }, { title: 'Volcanoes', startSeconds: 450 }] }))]);
  const { e } = engine(api.url, { transcriptChars: 8_000 });
  const notes = await e.notes(longLecture(), { language: 'en' });
  t.equal(notes.chapters.length, 2);
  t.ok(api.seen[0]!.body.messages[1].content.length <= 8_000);
});

t.test('openNotesEngine() picks the engine from the settings', async (t) => {
  t.equal(openNotesEngine({ engine: 'extractive' }).name, 'extractive');
  t.equal(openNotesEngine({ engine: 'openai', url: 'http://127.0.0.1:1/v1', model: 'm', key: KEY }).name, 'openai');
  t.throws(() => openNotesEngine({ engine: 'openai', model: 'm' }), /URL and a model/);
});
