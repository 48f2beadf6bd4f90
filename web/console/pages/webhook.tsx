import { useState } from 'preact/hooks';
import * as api from '../api.ts';
import { when } from '../format.ts';
import { href, navigate, setQuery } from '../router.ts';
import { Badge, ConfirmButton, ErrorNote, Filters, FilterSelect, Loaded, PageHead, useAction, useFlash, useLoad } from '../ui/common.tsx';
import { activeCount, DataTable, listQuery, PagedList, useList, type Column } from '../ui/list.tsx';
import { AutoDisabledBanner, EventPicker, SecretOnce } from './webhooks.tsx';
import { RedeliverMissed } from './redeliver-missed.tsx';
import { DELIVERY_STATUSES, eventsLabel, type Catalog, type Delivery, type Endpoint, type EndpointWithSecret } from './webhook-types.ts';

/** One endpoint: its state and actions (test, enable or disable, rotate, edit, delete) and its delivery log. */
export function WebhookPage({ id, query }: { id: string; query: URLSearchParams }) {
  const path = api.org(`/webhooks/${api.enc(id)}`);
  const [load, reload, set] = useLoad(() => Promise.all([api.get<Endpoint>(path), api.get<Catalog>(api.org('/webhooks/event-types'))]), id);
  const [secret, setSecret] = useState<string | null>(null);
  const [logKey, setLogKey] = useState(0);
  const [flash, say] = useFlash();
  const action = useAction();
  const [editing, setEditing] = useState(false);

  return (
    <Loaded load={load} what="the endpoint" retry={reload}>
      {([e, catalog]) => {
        const setEndpoint = (x: Endpoint) => set([x, catalog]);
        const test = () =>
          action.run(async () => {
            const d = await api.post<Delivery>(`${path}/test`);
            say(d.status === 'SUCCEEDED' ? `Test delivered: the receiver answered ${d.statusCode}.` : `Test sent and failed: ${d.error?.message ?? `the receiver answered ${d.statusCode}`}.`);
            setLogKey((k) => k + 1);
          });
        const enable = () =>
          action.run(async () => {
            setEndpoint(await api.patch<Endpoint>(path, { status: 'ACTIVE' }));
            say('Endpoint enabled: events are delivered again. "Redeliver missed events" sends what it missed.');
          });
        return (
          <>
            <PageHead title="Webhook endpoint" sub={<a href={href('/webhooks')}>← Webhooks</a>}>
              <button type="button" class="btn" onClick={test} disabled={action.busy}>
                Send test event
              </button>
              {e.status === 'DISABLED' ? (
                <button type="button" class="btn primary" onClick={enable} disabled={action.busy}>
                  Enable
                </button>
              ) : (
                <ConfirmButton
                  label="Disable"
                  title="Disable this endpoint?"
                  body={<p>Events are not sent to it while it is disabled; they are logged as skipped. You can enable it again and redeliver them.</p>}
                  confirmLabel="Disable endpoint"
                  danger
                  onConfirm={async () => {
                    setEndpoint(await api.patch<Endpoint>(path, { status: 'DISABLED' }));
                    say('Endpoint disabled.');
                  }}
                />
              )}
            </PageHead>
            {flash}
            {action.error && <ErrorNote error={action.error} />}
            <AutoDisabledBanner endpoints={[e]} />
            {secret && <SecretOnce secret={secret} note={e.previousSecretExpiresAt ? `Until ${when(e.previousSecretExpiresAt)} every delivery carries two signatures, the new secret's and the old one's, so switch your receiver to the new secret before then.` : undefined} />}
            <section class="panel" aria-labelledby="ep-h">
              <h2 id="ep-h" class="break">
                {e.url}
              </h2>
              <dl class="facts">
                <div>
                  <dt>Status</dt>
                  <dd>
                    <Badge value={e.status} />
                    {e.disabledReason && <span class="muted small"> {e.disabledReason.toLowerCase()}, {when(e.disabledAt)}</span>}
                  </dd>
                </div>
                <div>
                  <dt>Events</dt>
                  <dd>{e.events.includes('*') ? eventsLabel(e.events) : <span class="small">{e.events.join(', ')}</span>}</dd>
                </div>
                <div>
                  <dt>Description</dt>
                  <dd>{e.description || <span class="muted">none</span>}</dd>
                </div>
                <div>
                  <dt>Failing since</dt>
                  <dd>{e.failingSince ? <span class="warn-text">{when(e.failingSince)}</span> : <span class="muted">not failing</span>}</dd>
                </div>
                <div>
                  <dt>Signing secret</dt>
                  <dd>{e.previousSecretExpiresAt ? <>rotated; the previous secret also signs until {when(e.previousSecretExpiresAt)}</> : 'one secret'}</dd>
                </div>
                <div>
                  <dt>Created</dt>
                  <dd>{when(e.createdAt)}</dd>
                </div>
              </dl>
              <div class="row-actions">
                <button type="button" class="btn" aria-expanded={editing} onClick={() => setEditing(!editing)}>
                  {editing ? 'Close editing' : 'Edit URL, description and events'}
                </button>
                {e.status === 'ACTIVE' && (
                  <RedeliverMissed
                    endpoint={e}
                    onDone={(text) => {
                      say(text);
                      setLogKey((k) => k + 1);
                    }}
                  />
                )}
                <ConfirmButton
                  label="Rotate secret"
                  title="Rotate the signing secret?"
                  body={<p>A new secret is made and shown once. For 24 hours deliveries carry both signatures, new and old, so your receiver can switch without missing any.</p>}
                  confirmLabel="Rotate secret"
                  onConfirm={async () => {
                    const r = await api.post<EndpointWithSecret>(`${path}/rotate-secret`);
                    const { secret: s, ...rest } = r;
                    setEndpoint(rest);
                    setSecret(s);
                  }}
                />
                <ConfirmButton
                  label="Delete endpoint"
                  title="Delete this endpoint?"
                  body={<p>It stops receiving events at once, and its delivery log is deleted with it. This cannot be undone.</p>}
                  confirmLabel="Delete endpoint"
                  danger
                  onConfirm={async () => {
                    await api.del(path);
                    navigate(href('/webhooks'));
                  }}
                />
              </div>
              {editing && (
                <EditEndpoint
                  endpoint={e}
                  catalog={catalog}
                  path={path}
                  onSaved={(x) => {
                    setEndpoint(x);
                    setEditing(false);
                    say('Endpoint saved.');
                  }}
                />
              )}
            </section>
            <DeliveryLog key={logKey} endpointId={id} catalog={catalog} query={query} />
          </>
        );
      }}
    </Loaded>
  );
}

function EditEndpoint({ endpoint, catalog, path, onSaved }: { endpoint: Endpoint; catalog: Catalog; path: string; onSaved: (e: Endpoint) => void }) {
  const [url, setUrl] = useState(endpoint.url);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [events, setEvents] = useState(endpoint.events);
  const action = useAction();
  const submit = (ev: Event) => {
    ev.preventDefault();
    void action.run(async () => {
      const change: Record<string, unknown> = { events };
      if (url.trim() !== endpoint.url) change.url = url.trim();
      if (description.trim() !== (endpoint.description ?? '')) change.description = description.trim() || null;
      onSaved(await api.patch<Endpoint>(path, change));
    });
  };
  return (
    <form class="form edit" onSubmit={submit}>
      <label>
        <span>URL</span>
        <input name="url" type="url" required value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} spellcheck={false} />
      </label>
      <label>
        <span>Description</span>
        <input name="description" value={description} maxLength={500} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
      </label>
      <EventPicker catalog={catalog} value={events} onChange={setEvents} />
      {action.error && <ErrorNote error={action.error} />}
      <div class="form-actions">
        <button class="btn primary" type="submit" disabled={action.busy || events.length === 0}>
          {action.busy ? 'Saving…' : 'Save changes'}
        </button>
      </div>
    </form>
  );
}

const DELIVERY_COLUMNS: Column<Delivery>[] = [
  { head: 'When', class: 'nowrap', cell: (d) => <a href={href(`/webhooks/deliveries/${d.id}`)}>{when(d.createdAt)}</a> },
  { head: 'Event', cell: (d) => <code>{d.eventType}</code> },
  { head: 'Status', cell: (d) => <Badge value={d.status} /> },
  {
    head: 'Response',
    class: 'small',
    cell: (d) => (
      <>
        {d.statusCode !== null ? `HTTP ${d.statusCode}` : d.error ? d.error.kind : '—'}
        {d.durationMs !== null && <span class="muted"> · {d.durationMs} ms</span>}
      </>
    ),
  },
  {
    head: 'Attempt',
    class: 'small',
    cell: (d) => (
      <>
        {d.trigger === 'EVENT' ? `#${d.attempt}` : d.trigger.toLowerCase()}
        {d.nextAttemptAt && <div class="muted">next {when(d.nextAttemptAt)}</div>}
      </>
    ),
  },
];

/** The endpoint's attempts, newest first, filtered by status and event type (both in the URL). */
function DeliveryLog({ endpointId, catalog, query }: { endpointId: string; catalog: Catalog; query: URLSearchParams }) {
  const f = listQuery(query, ['status', 'eventType']);
  const [load, reload] = useList<Delivery>(api.org(`/webhooks/${api.enc(endpointId)}/deliveries`), f, 25);
  const active = activeCount([f.status, f.eventType]);
  return (
    <section class="section" aria-labelledby="log-h">
      <div class="section-head">
        <h2 id="log-h">Delivery log</h2>
        <button type="button" class="btn small" onClick={reload}>
          Refresh
        </button>
      </div>
      <Filters active={active}>
        <FilterSelect name="status" label="Status" options={DELIVERY_STATUSES} value={f.status} onChange={(v) => setQuery({ status: v })} />
        <FilterSelect name="eventType" label="Event type" options={['webhook.test', ...catalog.types.filter((t) => t !== 'webhook.test')]} value={f.eventType} onChange={(v) => setQuery({ eventType: v })} />
      </Filters>
      <PagedList load={load} what="deliveries" retry={reload} empty={active ? { title: 'No delivery matches these filters.', body: 'Clear a filter to see more.' } : { title: 'Nothing delivered yet.', body: 'Send a test event to see one here. Attempts are kept 30 days.' }}>
        {(page) => <DataTable label="Deliveries" columns={DELIVERY_COLUMNS} rows={page.data} rowKey={(d) => d.id} />}
      </PagedList>
    </section>
  );
}
