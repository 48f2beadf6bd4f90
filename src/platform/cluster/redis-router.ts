import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { ActorUnavailableError, fromWireError, invoke, NodeUnavailableError, shardOf, toWireError, type ActorHandler, type NodeServices, type WireError } from './cluster.ts';
import { sleep, TimeoutError, within } from './deadline.ts';
import { FencedError } from './fencing.ts';
import type { clusterKeys } from './placement.ts';

/** What the router needs from the node it routes for. */
export interface RouterHost {
  readonly nodeId: string;
  /** Whether this node takes send/ask calls now (running or draining). */
  accepting(): boolean;
  /** The handler and epoch when this node serves the shard now: fenced, not being handed over, renewed in time. */
  serving(shard: number): { handler: ActorHandler; epoch: number } | null;
  /** The handler's write was refused for a stale epoch: this node no longer owns the shard, whatever its lease says. */
  fenced(shard: number, epoch: number): void;
  /** The services this node answers node-addressed calls for. */
  readonly services: NodeServices;
}

/** A call addressed to one node's service (not to an actor), on the same inbox. */
export interface InboundCall {
  requestId: string;
  replyTo: string;
  service: string;
  payload: Record<string, unknown>;
}

/** On `<prefix>inbox:<node>`. */
export interface Inbound {
  requestId: string;
  replyTo: string;
  actorId: string;
  event: Record<string, unknown>;
  expectReply: boolean;
}

/** On `<prefix>reply:<node>`. A send() is answered with `ok` once the owner has taken the event. */
export type Reply = { requestId: string; ok: true; value?: unknown } | { requestId: string; error: 'not_owner' } | ({ requestId: string; error: 'failed' } & WireError);

type Outcome = { kind: 'ok'; value: unknown } | { kind: 'retry'; why: string } | { kind: 'error'; error: Error };

/**
 * send/ask over Redis: resolve the shard's owner from its lease key (cached briefly), call the handler
 * when it is this node, else publish to the owner's inbox and wait for the reply by request id.
 */
export class RedisRouter {
  readonly #host: RouterHost;
  readonly #cmd: Redis;
  readonly #keys: ReturnType<typeof clusterKeys>;
  readonly #log: Logger;
  readonly #ownerCacheMs: number;
  readonly #ownerCache = new Map<number, { owner: string | null; at: number }>();
  readonly #pending = new Map<string, (o: Outcome) => void>();

  constructor(host: RouterHost, cmd: Redis, keys: ReturnType<typeof clusterKeys>, log: Logger, ownerCacheMs: number) {
    this.#host = host;
    this.#cmd = cmd;
    this.#keys = keys;
    this.#log = log;
    this.#ownerCacheMs = ownerCacheMs;
  }

  remember(shard: number, owner: string): void {
    this.#ownerCache.set(shard, { owner, at: performance.now() });
  }

  forget(shard: number): void {
    this.#ownerCache.delete(shard);
  }

  /** Every call still waiting for a reply gives up (the node is stopping). */
  close(): void {
    for (const settle of this.#pending.values()) settle({ kind: 'retry', why: 'this node stopped' });
    this.#pending.clear();
  }

  /**
   * Finds the owner and delivers, retrying on every answer that proves the event was not taken
   * (no owner, owner not subscribed, not_owner, fenced) until the deadline. Once an owner has taken
   * the event it is never sent again, so an ask that times out may still have run.
   */
  async deliver(actorId: string, event: Record<string, unknown>, expectReply: boolean, timeoutMs: number): Promise<unknown> {
    const shard = shardOf(actorId);
    const deadline = performance.now() + timeoutMs;
    let backoff = 10;
    let why = 'no owner';
    let owner: string | null = null;
    const unavailable = (reason: string) =>
      new ActorUnavailableError({ message: `actor ${actorId} did not answer within ${timeoutMs} ms (${reason})`, details: { actorId, shard, owner, reason } });
    for (;;) {
      if (!this.#host.accepting()) throw unavailable('this node is not running');
      const remaining = deadline - performance.now();
      if (remaining <= 0) throw unavailable(why);
      const local = this.#host.serving(shard);
      // no owner can be found or reached without Redis: say so now (retryable) rather than at the deadline
      if (!local && this.#cmd.status !== 'ready') throw unavailable('Redis is not reachable');
      let outcome: Outcome;
      if (local) {
        owner = this.#host.nodeId;
        outcome = await this.#runLocal(local.handler, { actorId, event }, shard, local.epoch, expectReply, deadline);
      } else {
        outcome = await this.#resolveOwner(shard, remaining).then(
          (o): Promise<Outcome> | Outcome => {
            owner = o;
            if (o === null) return { kind: 'retry', why: 'no owner (shard moving)' };
            if (o === this.#host.nodeId) return { kind: 'retry', why: 'shard being acquired or handed over here' };
            return this.#remote(o, actorId, event, expectReply, deadline);
          },
          (err: unknown): Outcome => ({ kind: 'retry', why: err instanceof Error ? err.message : String(err) }),
        );
      }
      if (outcome.kind === 'ok') return outcome.value;
      if (outcome.kind === 'error') throw outcome.error;
      why = outcome.why;
      this.#ownerCache.delete(shard);
      await sleep(Math.min(backoff, deadline - performance.now()));
      backoff = Math.min(backoff * 2, 200);
    }
  }

  async #runLocal(handler: ActorHandler, msg: { actorId: string; event: Record<string, unknown> }, shard: number, epoch: number, expectReply: boolean, deadline: number): Promise<Outcome> {
    const run = invoke(handler, msg, shard, epoch);
    if (!expectReply) {
      run.catch((err) => this.#sendFailed(err, msg.actorId, shard, epoch));
      return { kind: 'ok', value: undefined };
    }
    try {
      return { kind: 'ok', value: await within(run, deadline - performance.now(), 'handler') };
    } catch (err) {
      if (err instanceof TimeoutError) return { kind: 'error', error: new ActorUnavailableError({ message: `actor ${msg.actorId} did not answer in time`, details: { actorId: msg.actorId, shard, owner: this.#host.nodeId, reason: 'timeout' } }) };
      if (err instanceof FencedError) {
        this.#host.fenced(shard, epoch);
        return { kind: 'retry', why: 'fenced' };
      }
      return { kind: 'error', error: err as Error };
    }
  }

  async #resolveOwner(shard: number, timeoutMs: number): Promise<string | null> {
    const hit = this.#ownerCache.get(shard);
    if (hit && performance.now() - hit.at < this.#ownerCacheMs) return hit.owner;
    const owner = await within(this.#cmd.get(this.#keys.lease(shard)), timeoutMs, 'resolve owner');
    this.#ownerCache.set(shard, { owner, at: performance.now() });
    return owner;
  }

  async #remote(owner: string, actorId: string, event: Record<string, unknown>, expectReply: boolean, deadline: number): Promise<Outcome> {
    const requestId = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const result = new Promise<Outcome>((resolve) => {
      this.#pending.set(requestId, resolve);
      timer = setTimeout(() => resolve({ kind: 'error', error: new ActorUnavailableError({ message: `actor ${actorId} on ${owner} did not answer in time`, details: { actorId, shard: shardOf(actorId), owner, reason: 'timeout' } }) }), Math.max(0, deadline - performance.now()));
    });
    try {
      const body: Inbound = { requestId, replyTo: this.#host.nodeId, actorId, event, expectReply };
      let receivers: number;
      try {
        receivers = await within(this.#cmd.publish(this.#keys.inbox(owner), JSON.stringify(body)), deadline - performance.now(), 'publish');
      } catch (err) {
        return { kind: 'retry', why: err instanceof Error ? err.message : String(err) };
      }
      if (receivers === 0) return { kind: 'retry', why: `owner ${owner} is not listening` };
      return await result;
    } finally {
      clearTimeout(timer);
      this.#pending.delete(requestId);
    }
  }


  /**
   * A call to one node's service: in process when it is this node, else over its inbox. Not retried:
   * a node that is not listening, or does not answer by the deadline, is reported unavailable.
   */
  async call(nodeId: string, service: string, payload: Record<string, unknown>, timeoutMs: number): Promise<unknown> {
    if (!this.#host.accepting()) throw new NodeUnavailableError(nodeId, 'this node is not running');
    if (nodeId === this.#host.nodeId) return this.#host.services.invoke(service, payload);
    if (this.#cmd.status !== 'ready') throw new NodeUnavailableError(nodeId, 'Redis is not reachable');
    const requestId = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const result = new Promise<Outcome>((resolve) => {
      this.#pending.set(requestId, resolve);
      timer = setTimeout(() => resolve({ kind: 'error', error: new NodeUnavailableError(nodeId, 'timeout') }), timeoutMs);
    });
    try {
      const body: InboundCall = { requestId, replyTo: this.#host.nodeId, service, payload };
      let receivers: number;
      try {
        receivers = await within(this.#cmd.publish(this.#keys.inbox(nodeId), JSON.stringify(body)), timeoutMs, 'publish');
      } catch (err) {
        throw new NodeUnavailableError(nodeId, err instanceof Error ? err.message : String(err));
      }
      if (receivers === 0) throw new NodeUnavailableError(nodeId, 'not listening');
      const outcome = await result;
      if (outcome.kind === 'ok') return outcome.value;
      if (outcome.kind === 'retry') throw new NodeUnavailableError(nodeId, outcome.why);
      throw outcome.error;
    } finally {
      clearTimeout(timer);
      this.#pending.delete(requestId);
    }
  }

  /** send() is answered before the handler finishes: its failure is only logged (a fenced one also steps down). */
  #sendFailed(err: unknown, actorId: string, shard: number, epoch: number): void {
    if (err instanceof FencedError) this.#host.fenced(shard, epoch);
    this.#log.warn({ err, actorId, shard }, 'send: the handler failed');
  }

  /** A message on this node's reply channel. */
  onReply(r: Reply): void {
    const settle = typeof r.requestId === 'string' ? this.#pending.get(r.requestId) : undefined;
    if (!settle) return; // late: the asker gave up
    if ('ok' in r) settle({ kind: 'ok', value: r.value });
    else if (r.error === 'not_owner') settle({ kind: 'retry', why: 'not_owner' });
    else settle({ kind: 'error', error: fromWireError(r) });
  }

  /** A message on this node's inbox channel: an actor message or a node call. */
  onInbound(m: Inbound | InboundCall): void {
    if ('service' in m) return this.#onCall(m);
    if (typeof m.requestId !== 'string' || typeof m.replyTo !== 'string' || typeof m.actorId !== 'string' || typeof m.event !== 'object' || m.event === null) return;
    const shard = shardOf(m.actorId);
    const reply = (r: Reply) => this.#reply(m.replyTo, r);
    const serving = this.#host.serving(shard);
    if (!serving) return reply({ requestId: m.requestId, error: 'not_owner' });
    const run = invoke(serving.handler, { actorId: m.actorId, event: m.event }, shard, serving.epoch);
    if (!m.expectReply) {
      run.catch((err) => this.#sendFailed(err, m.actorId, shard, serving.epoch));
      return reply({ requestId: m.requestId, ok: true });
    }
    run.then(
      (value) => reply({ requestId: m.requestId, ok: true, value }),
      (err) => {
        if (!(err instanceof FencedError)) return reply({ requestId: m.requestId, error: 'failed', ...toWireError(err) });
        this.#host.fenced(shard, serving.epoch);
        reply({ requestId: m.requestId, error: 'not_owner' });
      },
    );
  }

  #onCall(m: InboundCall): void {
    if (typeof m.requestId !== 'string' || typeof m.replyTo !== 'string' || typeof m.service !== 'string' || typeof m.payload !== 'object' || m.payload === null) return;
    this.#host.services.invoke(m.service, m.payload).then(
      (value) => this.#reply(m.replyTo, { requestId: m.requestId, ok: true, value }),
      (err) => this.#reply(m.replyTo, { requestId: m.requestId, error: 'failed', ...toWireError(err) }),
    );
  }

  #reply(to: string, r: Reply): void {
    let raw: string;
    try {
      raw = JSON.stringify(r);
    } catch (err) {
      raw = JSON.stringify({ requestId: r.requestId, error: 'failed', ...toWireError(err) });
    }
    this.#cmd.publish(this.#keys.reply(to), raw).catch((err) => this.#log.warn({ err: err.message }, 'could not send a reply'));
  }
}
