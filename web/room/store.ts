import type { EmbedEvent } from '../shared/embed-protocol.ts';
import { embedEvents } from './embed-events.ts';
import { initialState, reduce, type Action, type State } from './reducer.ts';

/**
 * The page's one store: the state, changed by the reducer (what the server says) or by the controller's
 * own steps (phases, choices), and the views that redraw when it changes. The SDK events a message means
 * go out as the message is reduced.
 */
export class Store {
  state: State = initialState;
  readonly #listeners = new Set<() => void>();

  constructor(readonly emit: (e: EmbedEvent) => void) {}

  subscribe(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  dispatch(action: Action): void {
    const before = this.state;
    this.state = reduce(before, action);
    for (const e of embedEvents(before, action, this.state)) this.emit(e);
    this.changed();
  }

  set(patch: Partial<State>): void {
    this.state = { ...this.state, ...patch };
    this.changed();
  }

  /** Something the views show outside the state changed (the media objects' tracks): redraw. */
  changed(): void {
    for (const fn of this.#listeners) fn();
  }
}
