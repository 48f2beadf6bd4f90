import t from 'tap';
import { POOR_FOR_MS, QualityWatch, type Timers } from '../../web/room/quality-watch.ts';

// The page offers audio only when the connection stays poor for 10 s (web/room/quality-watch.ts),
// with timers driven by the test.

class ManualTimers implements Timers {
  now = 0;
  #next = 1;
  readonly due = new Map<number, { at: number; fn: () => void }>();
  set(fn: () => void, ms: number): number {
    const id = this.#next++;
    this.due.set(id, { at: this.now + ms, fn });
    return id;
  }
  clear(id: unknown): void {
    this.due.delete(id as number);
  }
  advance(ms: number): void {
    this.now += ms;
    for (const [id, d] of [...this.due]) {
      if (d.at > this.now) continue;
      this.due.delete(id);
      d.fn();
    }
  }
}

t.test('quality 2 or below for 10 s offers audio only, once; a good spell in between starts over', async (t) => {
  const timers = new ManualTimers();
  let offers = 0;
  const w = new QualityWatch(() => offers++, timers);
  w.observe(2, false);
  timers.advance(POOR_FOR_MS - 1);
  w.observe(1, false);
  t.equal(offers, 0, 'not yet');
  timers.advance(1);
  t.equal(offers, 1, 'offered after 10 s of poor quality');
  w.observe(2, false);
  timers.advance(POOR_FOR_MS * 3);
  t.equal(offers, 1, 'not offered again while it stays poor');
  w.observe(4, false);
  w.observe(2, false);
  timers.advance(POOR_FOR_MS);
  t.equal(offers, 2, 'a new poor spell after a good one');
});

t.test('a fair moment resets the count; audio only already on, or no measure yet, offers nothing', async (t) => {
  const timers = new ManualTimers();
  let offers = 0;
  const w = new QualityWatch(() => offers++, timers);
  w.observe(2, false);
  timers.advance(POOR_FOR_MS - 1000);
  w.observe(3, false);
  w.observe(2, false);
  timers.advance(POOR_FOR_MS - 1000);
  t.equal(offers, 0, 'the 10 s start again after a fair reading');
  w.observe(1, true);
  timers.advance(POOR_FOR_MS * 2);
  t.equal(offers, 0, 'audio only is on already');
  w.observe(undefined, false);
  timers.advance(POOR_FOR_MS * 2);
  t.equal(offers, 0);
  w.observe(0, false);
  w.stop();
  timers.advance(POOR_FOR_MS * 2);
  t.equal(offers, 0, 'stopped with the visit');
});
