import { useRef, useState } from 'preact/hooks';
import type { QuestionView } from '../../../src/core/room.ts';
import { QUESTION_LIMITS } from '../../../src/core/classroom.ts';
import type { RoomController } from '../controller.ts';
import type { State } from '../reducer.ts';
import { Panel } from './panel.tsx';

/** The Q&A panel: anyone asks (optionally anonymously) and upvotes; hosts answer in text or live, or dismiss. */

type QuestionActions = Pick<RoomController, 'askQuestion' | 'upvoteQuestion' | 'answerQuestion' | 'dismissQuestion'>;

const value = (e: Event) => (e.target as HTMLInputElement).value;
const checked = (e: Event) => (e.target as HTMLInputElement).checked;

export function QuestionsPanel({
  classroom: s,
  host,
  act,
  onClose,
}: {
  classroom: Pick<State, 'questions' | 'ownQuestions' | 'upvoted'>;
  /** Hosts and cohosts answer and dismiss questions. */
  host: boolean;
  act: QuestionActions;
  onClose: () => void;
}) {
  const [text, setText] = useState('');
  const [anonymous, setAnonymous] = useState(false);
  const [sent, setSent] = useState(false);
  const input = useRef<HTMLTextAreaElement>(null);
  const byVotes = (a: QuestionView, b: QuestionView) => b.upvotes - a.upvotes || a.askedAt.localeCompare(b.askedAt);
  const open = s.questions.filter((q) => q.status === 'OPEN').sort(byVotes);
  const answered = s.questions.filter((q) => q.status === 'ANSWERED').sort((a, b) => (b.answeredAt ?? '').localeCompare(a.answeredAt ?? ''));
  return (
    <Panel label="Questions" title={`Q&A (${open.length} open)`} control="Q&A" onClose={onClose}>
      <form
        class="ask"
        onSubmit={async (e) => {
          e.preventDefault();
          if (!text.trim()) return;
          const asked = await act.askQuestion(text, anonymous);
          if (asked) setText('');
          setSent(asked);
          // the Ask button, disabled once the field is empty, would drop the focus: it goes back to the field, and the status says the question went
          input.current?.focus();
        }}
      >
        <textarea
          ref={input}
          aria-label="Your question"
          placeholder="Ask a question"
          maxLength={QUESTION_LIMITS.textChars}
          rows={2}
          value={text}
          onInput={(e) => {
            setText(value(e));
            setSent(false);
          }}
        />
        <div class="ask-row">
          <label class="check small">
            <input type="checkbox" checked={anonymous} onChange={(e) => setAnonymous(checked(e))} /> Ask anonymously
          </label>
          <button class="btn small primary" type="submit" disabled={!text.trim()}>
            Ask
          </button>
        </div>
        <p class="small sent" role="status" id="question-status">
          {sent ? 'Your question was sent.' : ''}
        </p>
      </form>
      {open.length + answered.length === 0 && <p class="muted small empty">No questions yet.</p>}
      <ul class="questions">
        {[...open, ...answered].map((q) => (
          <Question key={q.questionId} q={q} own={s.ownQuestions.includes(q.questionId)} upvoted={s.upvoted.includes(q.questionId)} host={host} act={act} />
        ))}
      </ul>
    </Panel>
  );
}

function Question({ q, own, upvoted, host, act }: { q: QuestionView; own: boolean; upvoted: boolean; host: boolean; act: QuestionActions }) {
  const [answering, setAnswering] = useState(false);
  const [answer, setAnswer] = useState('');
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
        onClick={() => void act.upvoteQuestion(q.questionId)}
      >
        ▲<span>{q.upvotes}</span>
      </button>
      {q.status === 'ANSWERED' && <p class="q-answer">{q.answeredLive ? 'Answered live' : q.answer}</p>}
      {host && q.status === 'OPEN' && !answering && (
        <div class="row-actions">
          <button class="btn small" onClick={() => setAnswering(true)}>
            Answer
          </button>
          <button class="btn small" onClick={() => void act.answerQuestion(q.questionId, null)}>
            Answered live
          </button>
          <button class="btn small danger" onClick={() => void act.dismissQuestion(q.questionId)}>
            Dismiss
          </button>
        </div>
      )}
      {host && answering && q.status === 'OPEN' && (
        <form
          class="answer"
          onSubmit={async (e) => {
            e.preventDefault();
            if (answer.trim() && (await act.answerQuestion(q.questionId, answer.trim()))) setAnswering(false);
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
