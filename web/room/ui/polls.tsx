import { useState } from 'preact/hooks';
import type { PollResults, PollView } from '../../../src/core/room.ts';
import { isCorrect, POLL_LIMITS, POLL_TYPES, pollOptions, type PollType } from '../../../src/core/classroom.ts';
import { RoomAccess } from '../../../src/core/room-access.ts';
import type { RosterEntry } from '../../../src/core/room.ts';
import type { RoomController } from '../controller.ts';
import type { PollAnswer, State } from '../reducer.ts';
import { Panel } from './panel.tsx';

/** The polls panel: hosts draft a poll or quiz, close it and share its results; the others answer it and see what was shared. */

type PollActions = Pick<RoomController, 'openPoll' | 'answerPoll' | 'closePoll' | 'sharePoll'>;

const TYPE_LABEL: Record<PollType, string> = {
  YES_NO: 'Yes / No',
  TRUE_FALSE: 'True / False',
  SINGLE_CHOICE: 'Single choice',
  MULTIPLE_CHOICE: 'Multiple choice',
  FREE_TEXT: 'Free text',
};

const value = (e: Event) => (e.target as HTMLInputElement).value;
const checked = (e: Event) => (e.target as HTMLInputElement).checked;

export function PollsPanel({
  classroom: s,
  host,
  act,
  onClose,
}: {
  classroom: Pick<State, 'polls' | 'pollResults' | 'answers' | 'roster'>;
  /** Hosts and cohosts draft, close and share polls; the others answer them. */
  host: boolean;
  act: PollActions;
  onClose: () => void;
}) {
  const polls = [...s.polls].reverse();
  const open = polls.find((p) => p.status === 'OPEN');
  const [drafting, setDrafting] = useState(polls.length === 0);
  return (
    <Panel label="Polls" title="Polls" control="Polls" onClose={onClose}>
      {host && !open && drafting && <NewPoll act={act} onDone={() => setDrafting(false)} />}
      {host && !open && !drafting && (
        <button class="btn primary wide" onClick={() => setDrafting(true)}>
          New poll
        </button>
      )}
      {!host && polls.length === 0 && <p class="muted small empty">No polls yet. When a host opens one, it appears here.</p>}
      <ul class="polls">
        {polls.map((p) => (
          <li key={p.pollId} class={`poll ${p.status === 'OPEN' ? 'open' : ''}`} aria-label={`${p.quiz ? 'Quiz' : 'Poll'}: ${p.question}`}>
            <Poll p={p} results={s.pollResults[p.pollId]} answer={s.answers[p.pollId]} host={host} act={act} students={s.roster.filter((x) => !RoomAccess.isHost(x.roomRole))} />
          </li>
        ))}
      </ul>
    </Panel>
  );
}

function Poll({ p, results, answer, host, act, students }: { p: PollView; results: PollResults | undefined; answer: PollAnswer | undefined; host: boolean; act: PollActions; students: RosterEntry[] }) {
  const verdict = !host && p.status === 'CLOSED' && p.quiz && p.correct && answer ? isCorrect(p.correct, answer.choices) : null;
  // hosts: how many of the people in the room answered, and (a named poll) who has not
  const answered = results?.answered ?? 0;
  const waitingFor = results?.answeredBy ? students.filter((x) => x.userId === null || !results.answeredBy!.includes(x.userId)) : null;
  return (
    <>
      <p class="poll-head">
        <span class="tag">{p.status === 'OPEN' ? 'Open' : 'Closed'}</span>
        <span class="muted small">
          {p.quiz ? 'Quiz' : 'Poll'} · {TYPE_LABEL[p.type]}
          {p.anonymous ? ' · anonymous' : ''}
        </span>
      </p>
      <h3>{p.question}</h3>
      {!host && p.status === 'OPEN' && !answer && <AnswerForm act={act} p={p} />}
      {!host && answer && verdict === null && <p class="small sent">{p.status === 'OPEN' ? 'Answer sent.' : 'You answered.'}</p>}
      {verdict !== null && (
        <p class={`verdict ${verdict ? 'right' : 'wrong'}`} id={`verdict-${p.pollId}`}>
          {verdict ? '✓ Correct' : '✗ Incorrect'}
        </p>
      )}
      {host && p.status === 'OPEN' && (
        <p class="small answered-count" id={`answered-${p.pollId}`}>
          {answered} of {Math.max(students.length, answered)} answered
          {waitingFor && waitingFor.length > 0 && waitingFor.length <= 12 && <span class="muted">. Not yet: {waitingFor.map((x) => x.name).join(', ')}</span>}
          {waitingFor && waitingFor.length > 12 && <span class="muted">. {waitingFor.length} have not answered yet</span>}
        </p>
      )}
      {(results || p.status === 'CLOSED') && <Results p={p} results={results} mine={answer} />}
      {host && p.status === 'OPEN' && (
        <div class="row-actions">
          <button class="btn small" onClick={() => void act.closePoll(p.pollId, false)}>
            Close
          </button>
          <button class="btn small primary" onClick={() => void act.closePoll(p.pollId, true)}>
            Close and share results
          </button>
        </div>
      )}
      {host && p.status === 'CLOSED' && !p.shared && (
        <div class="row-actions">
          <button class="btn small" onClick={() => void act.sharePoll(p.pollId)}>
            Share results
          </button>
        </div>
      )}
      {host && p.shared && <p class="muted small">Results shared with everyone.</p>}
    </>
  );
}

function Results({ p, results, mine }: { p: PollView; results: PollResults | undefined; mine: PollAnswer | undefined }) {
  const correct = p.correct ?? results?.correct ?? [];
  const total = results?.answered ?? 0;
  return (
    <div class="results">
      {results && (
        <p class="muted small">
          {total} {total === 1 ? 'answer' : 'answers'}
        </p>
      )}
      {p.options.length > 0 && (
        <ul class="bars">
          {p.options.map((o, i) => {
            const votes = results?.votes[i] ?? 0;
            const share = total ? Math.round((votes / total) * 100) : 0;
            const right = correct.includes(i);
            return (
              <li key={i} class={right ? 'correct' : ''}>
                <span class="label">
                  {o}
                  {right && <span class="ok"> ✓ correct</span>}
                  {mine?.choices.includes(i) && <span class="muted"> (your answer)</span>}
                </span>
                {results && (
                  <span class="bar" role="img" aria-label={`${votes} of ${total}`}>
                    <i style={{ width: `${share}%` }} />
                    <b>{share}%</b>
                  </span>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {results && results.texts.length > 0 && (
        <ul class="texts">
          {[...results.texts].reverse().map((t, i) => (
            <li key={i}>{t}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

function AnswerForm({ act, p }: { act: PollActions; p: PollView }) {
  const [choices, setChoices] = useState<number[]>([]);
  const [text, setText] = useState('');
  const multi = p.type === 'MULTIPLE_CHOICE';
  const ready = p.type === 'FREE_TEXT' ? text.trim().length > 0 : choices.length > 0;
  return (
    <form
      class="answer"
      onSubmit={(e) => {
        e.preventDefault();
        if (ready) void act.answerPoll(p.pollId, p.type === 'FREE_TEXT' ? { choices: [], text: text.trim() } : { choices, text: null });
      }}
    >
      {p.type === 'FREE_TEXT' ? (
        <textarea aria-label="Your answer" maxLength={POLL_LIMITS.answerChars} rows={3} value={text} onInput={(e) => setText(value(e))} />
      ) : (
        <fieldset>
          <legend class="sr-only">{multi ? 'Choose one or more' : 'Choose one'}</legend>
          {p.options.map((o, i) => (
            <label key={i} class="choice">
              <input
                type={multi ? 'checkbox' : 'radio'}
                name={`poll-${p.pollId}`}
                checked={choices.includes(i)}
                onChange={(e) => setChoices(multi ? (checked(e) ? [...choices, i] : choices.filter((x) => x !== i)) : [i])}
              />
              {o}
            </label>
          ))}
        </fieldset>
      )}
      <button class="btn small primary" type="submit" disabled={!ready}>
        Send answer
      </button>
    </form>
  );
}

function NewPoll({ act, onDone }: { act: PollActions; onDone: () => void }) {
  const [question, setQuestion] = useState('');
  const [pollType, setType] = useState<PollType>('SINGLE_CHOICE');
  const [anonymous, setAnonymous] = useState(false);
  const [given, setGiven] = useState<string[]>(['', '']);
  const [quiz, setQuiz] = useState(false);
  const [correct, setCorrect] = useState<number[]>([]);
  const fixed = pollType === 'YES_NO' || pollType === 'TRUE_FALSE';
  const options = fixed ? pollOptions(pollType, []) : given;
  const multi = pollType === 'MULTIPLE_CHOICE';
  const canQuiz = pollType !== 'FREE_TEXT';
  const filled = options.filter((o) => o.trim()).length;
  const ready = question.trim().length > 0 && (pollType === 'FREE_TEXT' || fixed || filled >= POLL_LIMITS.minOptions) && (!quiz || correct.length > 0);
  const reset = () => {
    setQuestion('');
    setGiven(['', '']);
    setCorrect([]);
  };
  return (
    <form
      class="new-poll"
      aria-label="New poll"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!ready) return;
        const ok = await act.openPoll({ question, pollType, anonymous, options: given, correct: quiz && canQuiz ? correct : [] });
        if (ok) {
          reset();
          onDone();
        }
      }}
    >
      <h3>New poll</h3>
      <label class="field">
        Question
        <input type="text" maxLength={POLL_LIMITS.questionChars} value={question} onInput={(e) => setQuestion(value(e))} placeholder="Ask the class something" />
      </label>
      <label class="field">
        Type
        <select
          value={pollType}
          onChange={(e) => {
            setType(value(e) as PollType);
            setCorrect([]);
          }}
        >
          {POLL_TYPES.map((t) => (
            <option value={t}>{TYPE_LABEL[t]}</option>
          ))}
        </select>
      </label>
      {pollType !== 'FREE_TEXT' && (
        <fieldset class="options">
          <legend>Options{quiz ? ': mark the correct ones' : ''}</legend>
          {options.map((o, i) => (
            <div class="option" key={i}>
              {quiz && (
                <input
                  type={multi ? 'checkbox' : 'radio'}
                  name="correct"
                  aria-label={`Option ${i + 1} is correct`}
                  checked={correct.includes(i)}
                  onChange={(e) => setCorrect(multi ? (checked(e) ? [...correct, i] : correct.filter((x) => x !== i)) : [i])}
                />
              )}
              {fixed ? (
                <span>{o}</span>
              ) : (
                <input type="text" aria-label={`Option ${i + 1}`} maxLength={POLL_LIMITS.optionChars} value={o} onInput={(e) => setGiven(given.map((g, j) => (j === i ? value(e) : g)))} />
              )}
              {!fixed && given.length > POLL_LIMITS.minOptions && (
                <button type="button" class="icon-btn small" aria-label={`Remove option ${i + 1}`} onClick={() => (setGiven(given.filter((_, j) => j !== i)), setCorrect([]))}>
                  ×
                </button>
              )}
            </div>
          ))}
          {!fixed && given.length < POLL_LIMITS.maxOptions && (
            <button type="button" class="btn small" onClick={() => setGiven([...given, ''])}>
              Add an option
            </button>
          )}
        </fieldset>
      )}
      <label class="check">
        <input type="checkbox" checked={anonymous} onChange={(e) => setAnonymous(checked(e))} /> Anonymous: nobody sees who answered what
      </label>
      {canQuiz && (
        <label class="check">
          <input
            type="checkbox"
            checked={quiz}
            onChange={(e) => {
              setQuiz(checked(e));
              setCorrect([]);
            }}
          />{' '}
          Quiz: grade the answers
        </label>
      )}
      <button class="btn primary" type="submit" disabled={!ready}>
        Open the poll
      </button>
    </form>
  );
}
