// The per-endpoint slots on their own (src/services/webhooks/delivery/slots.ts), with sends that end
// when the test says: at most `concurrency` in flight per endpoint and `maxInFlight` in the node, no
// slot left idle while a message waits for it, each endpoint's messages started in order, each once;
// stale, late and stopping.
import fc from 'fast-check';
import t from 'tap';
import { createLogger } from '../../src/platform/logger.ts';
import { Slots, type Slotted } from '../../src/services/webhooks/delivery/slots.ts';

interface Msg extends Slotted {
  id: number;
}

const flush = () => new Promise((r) => setImmediate(r));
const log = createLogger({ AULA_LOG_LEVEL: 'silent' });

function harness(o: { concurrency: number; maxInFlight: number; sendByMs?: number }) {
  const owned = new Map<number, number>([[1, 1]]);
  const inFlight: { m: Msg; answered: () => void }[] = [];
  const started: Msg[] = [];
  const late: Msg[] = [];
  const freed: { m: Msg; held: number }[] = [];
  let stopped = false;
  const slots: Slots<Msg> = new Slots<Msg>({
    concurrency: o.concurrency,
    maxInFlight: o.maxInFlight,
    sendByMs: o.sendByMs ?? 60_000,
    log,
    owned: () => owned,
    stopped: () => stopped,
    send: (m, answered) =>
      new Promise<void>((recorded) => {
        started.push(m);
        inFlight.push({
          m,
          answered: () => {
            answered();
            recorded();
          },
        });
      }),
    late: (ms) => late.push(...ms),
    freed: (m) => freed.push({ m, held: slots.held(m.endpointId) }),
  });
  let next = 0;
  const msg = (endpointId: string, claimedAt = performance.now()): Msg => ({ id: next++, endpointId, shard: 1, epoch: 1, claimedAt });
  /** Ends the i-th send in flight. */
  const answer = async (i = 0) => {
    const [s] = inFlight.splice(i, 1);
    s!.answered();
    await flush();
  };
  return { slots, owned, inFlight, started, late, freed, msg, answer, stop: () => (stopped = true) };
}

t.test('at most concurrency per endpoint and maxInFlight in the node, no idle slot while one waits, in order, each once', async (t) => {
  const command = fc.oneof(
    fc.record({ add: fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { minLength: 1, maxLength: 6 }) }),
    fc.record({ answer: fc.nat() }),
  );
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 8 }), fc.array(command, { maxLength: 40 }), async (concurrency, maxInFlight, commands) => {
      const h = harness({ concurrency, maxInFlight });
      const added: Msg[] = [];
      const check = () => {
        const flying = new Map<string, number>();
        for (const { m } of h.inFlight) flying.set(m.endpointId, (flying.get(m.endpointId) ?? 0) + 1);
        if (h.inFlight.length > maxInFlight || h.slots.inFlight !== h.inFlight.length) return false;
        const startedIds = new Set(h.started.map((m) => m.id));
        for (const e of ['a', 'b', 'c', 'd']) {
          const n = flying.get(e) ?? 0;
          const waiting = added.filter((m) => m.endpointId === e && !startedIds.has(m.id)).length;
          if (n > concurrency) return false;
          if (h.slots.held(e) !== n + waiting) return false;
          if (waiting > 0 && n < concurrency && h.inFlight.length < maxInFlight) return false;
          const order = h.started.filter((m) => m.endpointId === e).map((m) => m.id);
          if (order.some((id, i) => i > 0 && id < order[i - 1]!)) return false;
        }
        return h.slots.queued === added.length - h.started.length;
      };
      for (const c of commands) {
        if ('add' in c) {
          const ms = c.add.map((e) => h.msg(e));
          added.push(...ms);
          h.slots.add(ms);
          await flush();
        } else if (h.inFlight.length) {
          await h.answer(c.answer % h.inFlight.length);
        }
        if (!check()) return false;
      }
      while (h.inFlight.length) {
        await h.answer();
        if (!check()) return false;
      }
      return h.started.length === added.length && new Set(h.started.map((m) => m.id)).size === added.length && h.slots.queued === 0;
    }),
    { numRuns: 200 },
  );
  t.pass();
});

t.test('a freed slot is reported once the next message has it', async (t) => {
  const h = harness({ concurrency: 2, maxInFlight: 8 });
  h.slots.add([h.msg('a'), h.msg('a'), h.msg('a')]);
  await flush();
  t.equal(h.inFlight.length, 2);
  t.equal(h.slots.held('a'), 3);
  await h.answer();
  t.same(h.freed.map((f) => f.held), [2], 'the endpoint holds two: one started in its place, one in flight');
  t.equal(h.inFlight.length, 2);
  await h.answer();
  await h.answer();
  t.same(h.freed.map((f) => f.held), [2, 1, 0]);
  t.same(h.slots.heldIds(), [], 'nothing held');
});

t.test('a message whose shard moved on is not sent; one that waited too long is handed back', async (t) => {
  const h = harness({ concurrency: 1, maxInFlight: 8, sendByMs: 1000 });
  const first = h.msg('a');
  const stale = h.msg('a');
  const old = h.msg('a', performance.now() - 5000);
  const fresh = h.msg('a');
  h.slots.add([first]);
  await flush();
  h.slots.add([{ ...stale, epoch: 0 }, old, fresh]);
  await flush();
  t.same(h.started.map((m) => m.id), [first.id]);
  await h.answer();
  t.same(h.started.map((m) => m.id), [first.id, fresh.id], 'the stale one and the late one are skipped');
  t.same(h.late.map((m) => m.id), [old.id], 'the late one is handed back');
  await h.answer();
  t.equal(h.slots.queued, 0);
  t.equal(h.slots.held('a'), 0);
});

t.test('stopping: a freed slot starts nothing, and drain hands back what never started', async (t) => {
  const h = harness({ concurrency: 1, maxInFlight: 8 });
  const ms = [h.msg('a'), h.msg('a'), h.msg('b'), h.msg('b')];
  h.slots.add(ms);
  await flush();
  t.equal(h.inFlight.length, 2);
  h.stop();
  await h.answer();
  t.equal(h.inFlight.length, 1, 'nothing started in the freed slot');
  t.same(h.slots.drain().map((m) => m.id).sort(), [ms[1]!.id, ms[3]!.id]);
  t.equal(h.slots.queued, 0);
  await h.answer();
  await flush();
  t.equal(h.started.length, 2, 'the drained ones are never sent');
  t.equal(h.slots.inFlight, 0);
});
