import * as api from '../api.ts';
import { when } from '../format.ts';
import { href } from '../router.ts';
import { Badge, ErrorNote, Loaded, PageHead, useAction, useFlash, useLoad } from '../ui/common.tsx';
import type { Delivery, DeliveryDetail } from './webhook-types.ts';

/** One attempt: what was sent (the event), what came back (status, first 1 KB, timing), and redeliver. */
export function DeliveryPage({ deliveryId }: { deliveryId: string }) {
  const [load, reload] = useLoad(() => api.get<DeliveryDetail>(api.org(`/webhooks/deliveries/${api.enc(deliveryId)}`)), deliveryId);
  const action = useAction();
  const [flash, say] = useFlash();
  return (
    <Loaded load={load} what="the delivery" retry={reload}>
      {(d) => (
        <>
          <PageHead title="Delivery" sub={<a href={href(`/webhooks/${d.endpointId}`)}>← The endpoint's log</a>}>
            <button
              type="button"
              class="btn primary"
              disabled={action.busy}
              onClick={() =>
                action.run(async () => {
                  const r = await api.post<Delivery>(api.org(`/webhooks/deliveries/${api.enc(d.id)}/redeliver`));
                  say(`Redelivered: ${r.status === 'SUCCEEDED' ? `the receiver answered ${r.statusCode}` : `failed (${r.error?.message ?? `HTTP ${r.statusCode}`})`}.`);
                })
              }
            >
              {action.busy ? 'Sending…' : 'Redeliver'}
            </button>
          </PageHead>
          {flash}
          {action.error && <ErrorNote error={action.error} />}
          <section class="panel" aria-labelledby="d-h">
            <h2 id="d-h">
              <code>{d.eventType}</code> <Badge value={d.status} />
            </h2>
            <dl class="facts">
              <div>
                <dt>Sent</dt>
                <dd>{when(d.createdAt)}</dd>
              </div>
              <div>
                <dt>Trigger</dt>
                <dd>{d.trigger === 'EVENT' ? `attempt ${d.attempt} of 8` : d.trigger.toLowerCase()}</dd>
              </div>
              <div>
                <dt>Response</dt>
                <dd>{d.statusCode !== null ? `HTTP ${d.statusCode}` : 'none'}</dd>
              </div>
              <div>
                <dt>Time</dt>
                <dd>{d.durationMs !== null ? `${d.durationMs} ms` : '—'}</dd>
              </div>
              <div>
                <dt>Event id</dt>
                <dd>
                  <code>{d.eventId}</code>
                </dd>
              </div>
              <div>
                <dt>Next attempt</dt>
                <dd>{d.nextAttemptAt ? when(d.nextAttemptAt) : <span class="muted">none</span>}</dd>
              </div>
            </dl>
            {d.error && (
              <p class="banner bad">
                <strong>{d.error.kind}</strong>: {d.error.message}
              </p>
            )}
          </section>
          <section class="section" aria-labelledby="resp-h">
            <h2 id="resp-h">Response body (first 1 KB)</h2>
            {d.responseBody ? <pre class="code" tabIndex={0}>{d.responseBody}</pre> : <p class="muted">The receiver sent no body.</p>}
          </section>
          <section class="section" aria-labelledby="req-h">
            <h2 id="req-h">Request body</h2>
            {d.payload ? (
              <pre class="code" tabIndex={0}>
                {JSON.stringify(d.payload, null, 2)}
              </pre>
            ) : (
              <p class="muted">The event is no longer kept (events are kept 30 days).</p>
            )}
          </section>
        </>
      )}
    </Loaded>
  );
}
