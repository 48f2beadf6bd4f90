import fc from 'fast-check';
import t from 'tap';
import { answerProblem, draftProblem, isCorrect, pollOptions, POLL_LIMITS, POLL_TYPES } from '../../src/rooms/classroom.ts';

// The rules of polls and quizzes, as pure functions: what a host may draft, what an answer may be, and grading.

t.test('drafts: option counts per type, distinct options, quizzes only where answers can be graded', async (t) => {
  t.same(pollOptions('YES_NO', ['ignored']), ['Yes', 'No']);
  t.same(pollOptions('TRUE_FALSE', []), ['True', 'False']);
  t.same(pollOptions('FREE_TEXT', ['x']), []);
  t.equal(draftProblem({ type: 'SINGLE_CHOICE', options: ['A'], correct: [] })?.field, 'options');
  t.equal(draftProblem({ type: 'MULTIPLE_CHOICE', options: Array.from({ length: POLL_LIMITS.maxOptions + 1 }, (_, i) => `o${i}`), correct: [] })?.field, 'options');
  t.equal(draftProblem({ type: 'SINGLE_CHOICE', options: ['Same', ' same '], correct: [] })?.field, 'options', 'options must differ');
  t.equal(draftProblem({ type: 'FREE_TEXT', options: ['A'], correct: [] })?.field, 'options');
  t.equal(draftProblem({ type: 'FREE_TEXT', options: [], correct: [0] })?.field, 'correct');
  t.equal(draftProblem({ type: 'YES_NO', options: [], correct: [0, 1] })?.field, 'correct', 'one correct option for a yes/no quiz');
  t.equal(draftProblem({ type: 'SINGLE_CHOICE', options: ['A', 'B'], correct: [2] })?.field, 'correct', 'an index past the options');
  t.equal(draftProblem({ type: 'MULTIPLE_CHOICE', options: ['A', 'B', 'C'], correct: [0, 0] })?.field, 'correct', 'each once');
  t.equal(draftProblem({ type: 'MULTIPLE_CHOICE', options: ['A', 'B', 'C'], correct: [0, 2] }), null);
  t.equal(draftProblem({ type: 'TRUE_FALSE', options: [], correct: [1] }), null);
  t.equal(draftProblem({ type: 'FREE_TEXT', options: [], correct: [] }), null);
});

t.test('answers: choices within the options, one for the one-answer types, text only for free text', async (t) => {
  const single = { type: 'SINGLE_CHOICE' as const, options: ['A', 'B', 'C'] };
  const multi = { type: 'MULTIPLE_CHOICE' as const, options: ['A', 'B', 'C'] };
  const free = { type: 'FREE_TEXT' as const, options: [] };
  t.equal(answerProblem(single, [1], null), null);
  t.ok(answerProblem(single, [0, 1], null));
  t.ok(answerProblem(single, [], null));
  t.ok(answerProblem(single, [3], null));
  t.ok(answerProblem(single, [1], 'text'));
  t.equal(answerProblem(multi, [0, 2], null), null);
  t.ok(answerProblem(multi, [2, 2], null));
  t.ok(answerProblem(multi, [], null));
  t.equal(answerProblem(free, [], 'An answer'), null);
  t.ok(answerProblem(free, [], '   '));
  t.ok(answerProblem(free, [0], 'x'));
  t.ok(answerProblem(free, [], 'x'.repeat(POLL_LIMITS.answerChars + 1)));
});

t.test('grading: correct exactly when the chosen set is the correct set; polls are not graded', async (t) => {
  t.equal(isCorrect([], [0]), null);
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1 }), fc.uniqueArray(fc.integer({ min: 0, max: 9 })), (correct, chosen) => {
      const same = correct.length === chosen.length && [...correct].sort().join() === [...chosen].sort().join();
      return isCorrect(correct, chosen) === same;
    }),
  );
  fc.assert(
    fc.property(fc.constantFrom(...POLL_TYPES), fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 12 }), (type, options) => {
      // every draft the rules accept yields options an answer can name
      const problem = draftProblem({ type, options, correct: [] });
      if (problem) return true;
      const made = pollOptions(type, options);
      return type === 'FREE_TEXT' ? made.length === 0 : made.length >= 2 && answerProblem({ type, options: made }, [0], null) === null;
    }),
  );
  t.pass('checked');
});
