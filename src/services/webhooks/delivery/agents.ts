import type { Agent } from 'undici';
import { closeAgent, vettedAgent } from '../sender.ts';
import type { AttemptInput } from '../envelope.ts';

export interface AgentsOptions {
  allowPrivate: boolean;
  /** Connections kept per endpoint: its concurrency. */
  connections: number;
  lookup?: AttemptInput['lookup'] | undefined;
  ca?: AttemptInput['ca'] | undefined;
}

/** One vetted agent per endpoint, so its connections are kept alive between attempts. */
export class EndpointAgents {
  readonly #o: AgentsOptions;
  readonly #agents = new Map<string, { agent: Agent; url: string; lastUsed: number }>();

  constructor(o: AgentsOptions) {
    this.#o = o;
  }

  /**
   * The endpoint's agent: its connections are kept alive (each one pinned to the address it was
   * vetted for; a new one is vetted again), replaced when the URL changes, closed when idle.
   */
  for(endpointId: string, url: string): Agent {
    const now = performance.now();
    const held = this.#agents.get(endpointId);
    if (held && held.url === url) {
      held.lastUsed = now;
      return held.agent;
    }
    if (held) void closeAgent(held.agent);
    const agent = vettedAgent({
      allowPrivate: this.#o.allowPrivate,
      connections: this.#o.connections,
      ...(this.#o.lookup ? { lookup: this.#o.lookup } : {}),
      ...(this.#o.ca ? { ca: this.#o.ca } : {}),
    });
    this.#agents.set(endpointId, { agent, url, lastUsed: now });
    return agent;
  }

  /** Closes the agents of endpoints with no send for `idleMs` and nothing held (`busy`) in this node. */
  closeIdle(idleMs: number, busy: (endpointId: string) => boolean): void {
    const cutoff = performance.now() - idleMs;
    for (const [id, a] of this.#agents) {
      if (a.lastUsed < cutoff && !busy(id)) {
        this.#agents.delete(id);
        void closeAgent(a.agent);
      }
    }
  }

  closeAll(): void {
    for (const a of this.#agents.values()) void closeAgent(a.agent);
    this.#agents.clear();
  }
}
