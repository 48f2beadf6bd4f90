import { useState } from 'preact/hooks';
import type { PollResults, PollView, QuestionView } from '../../src/core/room.ts';
import { POLL_LIMITS, POLL_TYPES, pollOptions, QUESTION_LIMITS, type PollType } from '../../src/core/classroom.ts';
import type { RoomController } from './controller.ts';
import { Panel } from './panel.tsx';

/** The polls and Q&A panels of the room. */

const TYPE_LABEL: Record<PollType, string> = {
  YES_NO: 'Yes / No',
  TRUE_FALSE: 'True / False',
  SINGLE_CHOICE: 'Single choice',
  MULTIPLE_CHOICE: 'Multiple choice',
  FREE_TEXT: 'Free text',
};

const value = (e: Event) => (e.target as HTMLInputElement).value;
const checked = (e: Event) => (e.target as HTMLInputElement).checked;

// ---- polls ----------------------------------------------------------------------------------------

export function PollsPanel({ c, onClose }: { c: RoomController; onClose: () => void }) {
  const polls = [...c.state.polls].reverse();
  const open = polls.find((p) => p.status === 'OPEN');
  const [drafting, setDrafting] = useState(polls.length === 0);
  return (
    <Panel label="Polls" title="Polls" control="Polls" onClose={onClose}>
      {c.isHost && !open && drafting && <NewPoll c={c} onDone={() => setDrafting(false)} />}
      {c.isHost && !open && !drafting && (
        <button class="btn primary wide" onClick={() => setDrafting(true)}>
          New poll
        </button>
      )}
      {!c.isHost && polls.length === 0 && <p class="muted small empty">No polls yet. When a host opens one, it appears here.</p>}
      <ul class="polls">
        {polls.map((p) => (
          <li key={p.pollId} class={`poll ${p.status === 'OPEN' ? 'open' : ''}`} aria-label={`${p.quiz ? 'Quiz' : 'Poll'}: ${p.question}`}>
            <Poll c={c} p={p} />
          </li>
        ))}
      </ul>
    </Panel>
  );
}

function Poll({ c, p }: { c: RoomController; p: PollView }) {
  const results = c.state.pollResults[p.pollId];
  const answer = c.state.answers[p.pollId];
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
      {!c.isHost && p.status === 'OPEN' && !answer && <AnswerForm c={c} p={p} />}
      {!c.isHost && answer && <p class="small sent">{p.status === 'OPEN' ? 'Answer sent.' : 'You answered.'}</p>}
      {(results || p.status === 'CLOSED') && <Results p={p} results={results} mine={answer} />}
      {c.isHost && p.status === 'OPEN' && (
        <div class="row-actions">
          <button class="btn small" onClick={() => void c.closePoll(p.pollId, false)}>
            Close
          </button>
          <button class="btn small primary" onClick={() => void c.closePoll(p.pollId, true)}>
            Close and share results
          </button>
        </div>
      )}
      {c.isHost && p.status === 'CLOSED' && !p.shared && (
        <div class="row-actions">
          <button class="btn small" onClick={() => void c.sharePoll(p.pollId)}>
            Share results
          </button>
        </div>
      )}
      {c.isHost && p.shared && <p class="muted small">Results shared with everyone.</p>}
    </>
  );
}

function Results({ p, results, mine }: { p: PollView; results: PollResults | undefined; mine: { choices: number[]; text: string | null } | undefined }) {
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

function AnswerForm({ c, p }: { c: RoomController; p: PollView }) {
  const [choices, setChoices] = useState<number[]>([]);
  const [text, setText] = useState('');
  const multi = p.type === 'MULTIPLE_CHOICE';
  const ready = p.type === 'FREE_TEXT' ? text.trim().length > 0 : choices.length > 0;
  return (
    <form
      class="answer"
      onSubmit={(e) => {
        e.preventDefault();
        if (ready) void c.answerPoll(p.pollId, p.type === 'FREE_TEXT' ? { choices: [], text: text.trim() } : { choices, text: null });
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

function NewPoll({ c, onDone }: { c: RoomController; onDone: () => void }) {
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
        const ok = await c.openPoll({ question, pollType, anonymous, options: given, correct: quiz && canQuiz ? correct : [] });
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

// ---- Q&A ------------------------------------------------------------------------------------------

export function QuestionsPanel({ c, onClose }: { c: RoomController; onClose: () => void }) {
  const [text, setText] = useState('');
  const [anonymous, setAnonymous] = useState(false);
  const byVotes = (a: QuestionView, b: QuestionView) => b.upvotes - a.upvotes || a.askedAt.localeCompare(b.askedAt);
  const open = c.state.questions.filter((q) => q.status === 'OPEN').sort(byVotes);
  const answered = c.state.questions.filter((q) => q.status === 'ANSWERED').sort((a, b) => (b.answeredAt ?? '').localeCompare(a.answeredAt ?? ''));
  return (
    <Panel label="Questions" title={`Q&A (${open.length} open)`} control="Q&A" onClose={onClose}>
      <form
        class="ask"
        onSubmit={async (e) => {
          e.preventDefault();
          if (text.trim() && (await c.askQuestion(text, anonymous))) setText('');
        }}
      >
        <textarea aria-label="Your question" placeholder="Ask a question" maxLength={QUESTION_LIMITS.textChars} rows={2} value={text} onInput={(e) => setText(value(e))} />
        <div class="ask-row">
          <label class="check small">
            <input type="checkbox" checked={anonymous} onChange={(e) => setAnonymous(checked(e))} /> Ask anonymously
          </label>
          <button class="btn small primary" type="submit" disabled={!text.trim()}>
            Ask
          </button>
        </div>
      </form>
      {open.length + answered.length === 0 && <p class="muted small empty">No questions yet.</p>}
      <ul class="questions">
        {[...open, ...answered].map((q) => (
          <Question key={q.questionId} c={c} q={q} />
        ))}
      </ul>
    </Panel>
  );
}

function Question({ c, q }: { c: RoomController; q: QuestionView }) {
  const [answering, setAnswering] = useState(false);
  const [answer, setAnswer] = useState('');
  const own = c.state.ownQuestions.includes(q.questionId);
  const upvoted = c.state.upvoted.includes(q.questionId);
  return (
    <li class={`question ${q.status === 'ANSWERED' ? 'answered' : ''}`}>
      <div class="q-main">
        <p class="q-text">{q.text}</p>
        <p class="muted small">
          {q.askedBy ? q.askedBy.name : 'Anonymous'}
          {own ? ' (you)' : ''}
        </p>
      </div>
      <button
        class={`vote${upvoted ? ' on' : ''}`}
        aria-label={`Upvote: ${q.upvotes}`}
        aria-pressed={upvoted}
        disabled={own || upvoted || q.status !== 'OPEN'}
        onClick={() => void c.upvoteQuestion(q.questionId)}
      >
        ▲<span>{q.upvotes}</span>
      </button>
      {q.status === 'ANSWERED' && <p class="q-answer">{q.answeredLive ? 'Answered live' : q.answer}</p>}
      {c.isHost && q.status === 'OPEN' && !answering && (
        <div class="row-actions">
          <button class="btn small" onClick={() => setAnswering(true)}>
            Answer
          </button>
          <button class="btn small" onClick={() => void c.answerQuestion(q.questionId, null)}>
            Answered live
          </button>
          <button class="btn small danger" onClick={() => void c.dismissQuestion(q.questionId)}>
            Dismiss
          </button>
        </div>
      )}
      {c.isHost && answering && q.status === 'OPEN' && (
        <form
          class="answer"
          onSubmit={async (e) => {
            e.preventDefault();
            if (answer.trim() && (await c.answerQuestion(q.questionId, answer.trim()))) setAnswering(false);
          }}
        >
          <textarea aria-label="Your answer" maxLength={QUESTION_LIMITS.answerChars} rows={2} value={answer} onInput={(e) => setAnswer(value(e))} />
          <div class="row-actions">
            <button class="btn small primary" type="submit" disabled={!answer.trim()}>
              Send answer
            </button>
            <button class="btn small" type="button" onClick={() => setAnswering(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </li>
  );
}
