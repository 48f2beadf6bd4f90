/** Time is injected everywhere a deadline matters, so tests can drive it. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  #now: number;
  constructor(start: number | Date = Date.parse('2026-01-05T09:00:00Z')) {
    this.#now = typeof start === 'number' ? start : start.getTime();
  }
  now(): number {
    return this.#now;
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(at: number | Date): void {
    this.#now = typeof at === 'number' ? at : at.getTime();
  }
}

export const iso = (ms: number): string => new Date(ms).toISOString();
