import t from 'tap';
import { createActor, type SnapshotFrom } from 'xstate';
import { AUTO_DISABLE_AFTER_MS, ROTATION_OVERLAP_MS, WEBHOOK_TIMERS, webhookEndpointMachine } from '../../actors/webhook-endpoint/webhook-endpoint.machine.ts';
import { webhookEndpointEvent, webhookEndpointInput } from '../../actors/webhook-endpoint/webhook-endpoint.schemas.ts';
import type { WebhookEndpointEffect, WebhookEndpointInput } from '../../actors/webhook-endpoint/webhook-endpoint.types.ts';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const H = 3_600_000;

const base: WebhookEndpointInput = {
  endpointId: 'whe_1',
  orgId: 'org_1',
  url: 'https://hooks.example.com/in',
  status: 'ACTIVE',
  disabledReason: null,
  disabledAt: null,
  failingSince: null,
  rotationExpiresAt: null,
};

function endpoint(input: Partial<WebhookEndpointInput> = {}, snapshot?: SnapshotFrom<typeof webhookEndpointMachine>) {
  const actor = createActor(webhookEndpointMachine, { input: webhookEndpointInput.parse({ ...base, ...input }), ...(snapshot ? { snapshot } : {}) });
  let effects: WebhookEndpointEffect[] = [];
  actor.on('*', (e) => effects.push(e));
  actor.start();
  const send = (event: Record<string, unknown>): WebhookEndpointEffect[] => {
    effects = [];
    actor.send(webhookEndpointEvent.parse(event));
    if (effects.filter((e) => e.type === 'reply').length > 1) throw new Error(`${String(event.type)}: more than one reply`);
    return effects;
  };
  if (!snapshot) send({ type: 'INIT', at: T0 });
  return {
    actor,
    send,
    get state() {
      return actor.getSnapshot().value;
    },
    get context() {
      return actor.getSnapshot().context;
    },
  };
}

const types = (effects: WebhookEndpointEffect[]) => effects.map((e) => e.type);

t.test('healthy -> failing on the first failure, which arms the 3-day timer; a success recovers', async (t) => {
  const ep = endpoint();
  t.same(ep.state, { active: 'healthy' });
  let fx = ep.send({ type: 'DELIVERY_FAILED', at: T0 + 1000 });
  t.same(ep.state, { active: 'failing' });
  t.equal(ep.context.failingSince, T0 + 1000);
  t.same(fx.find((e) => e.type === 'timer.set'), { type: 'timer.set', name: WEBHOOK_TIMERS.autoDisable, dueAt: T0 + 1000 + AUTO_DISABLE_AFTER_MS });
  fx = ep.send({ type: 'DELIVERY_FAILED', at: T0 + 2 * H });
  t.same(types(fx), ['reply'], 'later failures change nothing');
  t.equal(ep.context.failingSince, T0 + 1000, 'the clock keeps its start');
  fx = ep.send({ type: 'DELIVERY_SUCCEEDED', at: T0 + 3 * H });
  t.same(ep.state, { active: 'healthy' });
  t.equal(ep.context.failingSince, null);
  t.same(fx.find((e) => e.type === 'timer.cancel'), { type: 'timer.cancel', name: WEBHOOK_TIMERS.autoDisable });
});

t.test('3 days of failures: disabled (FAILING), owners notified; a stale timer does nothing', async (t) => {
  const ep = endpoint();
  ep.send({ type: 'DELIVERY_FAILED', at: T0 });
  let fx = ep.send({ type: 'TIMER', name: WEBHOOK_TIMERS.autoDisable, at: T0 + AUTO_DISABLE_AFTER_MS - 1 });
  t.same(ep.state, { active: 'failing' }, 'a timer firing early changes nothing');
  t.same(fx, []);
  fx = ep.send({ type: 'TIMER', name: WEBHOOK_TIMERS.autoDisable, at: T0 + AUTO_DISABLE_AFTER_MS });
  t.equal(ep.state, 'disabled');
  t.match(ep.context, { status: 'DISABLED', disabledReason: 'FAILING', disabledAt: T0 + AUTO_DISABLE_AFTER_MS });
  t.same(fx.find((e) => e.type === 'notify.disabled'), { type: 'notify.disabled', reason: 'FAILING', failingSince: T0 });
  fx = ep.send({ type: 'DELIVERY_SUCCEEDED', at: T0 + AUTO_DISABLE_AFTER_MS + 1 });
  t.equal(ep.state, 'disabled', 'a late result of a send in flight does not re-enable it');
  fx = ep.send({ type: 'ENABLE', at: T0 + 4 * 24 * H });
  t.same(ep.state, { active: 'healthy' });
  t.match(ep.context, { status: 'ACTIVE', disabledReason: null, disabledAt: null, failingSince: null });
  t.match(fx.at(-1), { type: 'reply', body: { ok: true, status: 'ACTIVE' } });
  const healthy = endpoint();
  t.same(healthy.send({ type: 'TIMER', name: WEBHOOK_TIMERS.autoDisable, at: T0 + 10 * 24 * H }), [], 'a timer left from an earlier failure spell does nothing');
  t.same(healthy.state, { active: 'healthy' });
});

t.test('a 410 disables at once (GONE) and notifies; an admin disable does not notify', async (t) => {
  const ep = endpoint();
  let fx = ep.send({ type: 'DELIVERY_FAILED', gone: true, at: T0 });
  t.equal(ep.state, 'disabled');
  t.equal(ep.context.disabledReason, 'GONE');
  t.ok(types(fx).includes('notify.disabled'));
  const failing = endpoint({ failingSince: T0 - H });
  fx = failing.send({ type: 'DELIVERY_FAILED', gone: true, at: T0 });
  t.equal(failing.context.disabledReason, 'GONE', 'also while failing');
  const manual = endpoint();
  fx = manual.send({ type: 'DISABLE', at: T0 });
  t.equal(manual.context.disabledReason, 'MANUAL');
  t.notOk(types(fx).includes('notify.disabled'));
  t.match(manual.send({ type: 'DISABLE', at: T0 + 1 }).at(-1), { type: 'reply', body: { ok: true, status: 'DISABLED' } }, 'disabling again is a no-op');
  t.match(ep.send({ type: 'ENABLE', at: T0 + 2 }).at(-1), { body: { ok: true, status: 'ACTIVE' } });
  t.match(ep.send({ type: 'ENABLE', at: T0 + 3 }).at(-1), { body: { ok: true, status: 'ACTIVE' } }, 'enabling again is a no-op');
});

t.test('a fresh actor settles into its row and re-arms its timers', async (t) => {
  const fx: WebhookEndpointEffect[] = [];
  const failing = createActor(webhookEndpointMachine, { input: webhookEndpointInput.parse({ ...base, failingSince: T0 - H, rotationExpiresAt: T0 + 5 * H }) });
  failing.on('*', (e) => fx.push(e));
  failing.start();
  failing.send({ type: 'INIT', at: T0 });
  t.same(failing.getSnapshot().value, { active: 'failing' });
  t.same(fx.filter((e) => e.type === 'timer.set').map((e) => (e as { name: string }).name).sort(), [WEBHOOK_TIMERS.autoDisable, WEBHOOK_TIMERS.rotation].sort());
  const disabled = endpoint({ status: 'DISABLED', disabledReason: 'GONE', disabledAt: T0 - H });
  t.equal(disabled.state, 'disabled');
  t.equal(disabled.context.disabledReason, 'GONE');
});

t.test('rotation: the overlap timer erases the previous secret when due, in every state', async (t) => {
  const ep = endpoint();
  let fx = ep.send({ type: 'ROTATED', expiresAt: T0 + ROTATION_OVERLAP_MS, at: T0 });
  t.same(fx.find((e) => e.type === 'timer.set'), { type: 'timer.set', name: WEBHOOK_TIMERS.rotation, dueAt: T0 + ROTATION_OVERLAP_MS });
  ep.send({ type: 'DELIVERY_FAILED', at: T0 + H });
  fx = ep.send({ type: 'TIMER', name: WEBHOOK_TIMERS.rotation, at: T0 + ROTATION_OVERLAP_MS - 1 });
  t.same(fx, [], 'not before it is due');
  fx = ep.send({ type: 'TIMER', name: WEBHOOK_TIMERS.rotation, at: T0 + ROTATION_OVERLAP_MS });
  t.same(types(fx), ['secret.expired']);
  t.equal(ep.context.rotationExpiresAt, null);
  t.same(ep.state, { active: 'failing' }, 'the failure spell is untouched');
  const off = endpoint({ status: 'DISABLED', disabledReason: 'MANUAL', disabledAt: T0 });
  off.send({ type: 'ROTATED', expiresAt: T0 + ROTATION_OVERLAP_MS, at: T0 });
  t.same(types(off.send({ type: 'TIMER', name: WEBHOOK_TIMERS.rotation, at: T0 + ROTATION_OVERLAP_MS })), ['secret.expired'], 'also while disabled');
});

t.test('delete: everything after it answers not_found; the snapshot restores', async (t) => {
  const ep = endpoint();
  ep.send({ type: 'ROTATED', expiresAt: T0 + ROTATION_OVERLAP_MS, at: T0 });
  const fx = ep.send({ type: 'DELETE', at: T0 + 1 });
  t.equal(ep.state, 'deleted');
  t.same(fx.filter((e) => e.type === 'timer.cancel').map((e) => (e as { name: string }).name).sort(), [WEBHOOK_TIMERS.autoDisable, WEBHOOK_TIMERS.rotation].sort());
  const restored = endpoint({}, ep.actor.getPersistedSnapshot() as SnapshotFrom<typeof webhookEndpointMachine>);
  for (const type of ['ENABLE', 'DISABLE', 'DELETE', 'STATUS', 'DELIVERY_FAILED']) {
    t.match(restored.send({ type, at: T0 + 2 }).at(-1), { type: 'reply', body: { ok: false, error: { code: 'not_found' } } }, `${type} after delete`);
  }
});
