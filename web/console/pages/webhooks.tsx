import { useState } from 'preact/hooks';
import * as api from '../api.ts';
import { when } from '../format.ts';
import { href, useLocation } from '../router.ts';
import { Badge, Empty, ErrorNote, Loaded, PageHead, ShownOnce, useAction, useLoad } from '../ui/common.tsx';
import { DataTable, listQuery, NameCell, PagedList, useList, type Column } from '../ui/list.tsx';
import { eventsLabel, WILDCARD, type Catalog, type Endpoint, type EndpointWithSecret } from './webhook-types.ts';

/** Endpoints the server turned off by itself: the list says so before anything else. */
export function AutoDisabledBanner({ endpoints }: { endpoints: Endpoint[] }) {
  const off = endpoints.filter((e) => e.status === 'DISABLED' && (e.disabledReason === 'FAILING' || e.disabledReason === 'GONE'));
  if (!off.length) return null;
  return (
    <div class="banner bad" role="alert">
      <p>
        <strong>
          {off.length === 1 ? 'An endpoint was turned off' : `${off.length} endpoints were turned off`} because deliveries kept failing.
        </strong>{' '}
        No events are sent to {off.length === 1 ? 'it' : 'them'} until enabled again. Fix the receiver, send a test, enable the endpoint, then use "Redeliver missed events" on its page.
      </p>
      <ul>
        {off.map((e) => (
          <li key={e.id}>
            <a href={href(`/webhooks/${e.id}`)}>{e.url}</a> — {e.disabledReason === 'GONE' ? 'the receiver answered 410 Gone' : 'every delivery failed for 3 days'}, {when(e.disabledAt)}
          </li>
        ))}
      </ul>
    </div>
  );
}

const COLUMNS: Column<Endpoint>[] = [
  { head: 'Endpoint', class: 'wrap', cell: (e) => <NameCell to={href(`/webhooks/${e.id}`)} name={e.url} sub={e.description} /> },
  { head: 'Events', cell: (e) => eventsLabel(e.events) },
  {
    head: 'Status',
    cell: (e) => (
      <>
        <Badge value={e.status} />
        {e.status === 'ACTIVE' && e.failingSince && <div class="small warn-text">failing since {when(e.failingSince)}</div>}
      </>
    ),
  },
  { head: 'Created', class: 'nowrap', cell: (e) => when(e.createdAt) },
];

export function Webhooks() {
  const [load, reload] = useList<Endpoint>(api.org('/webhooks'), listQuery(useLocation().query, []), 50);
  return (
    <>
      <PageHead title="Webhooks" sub="Addresses of yours that receive your organization's events as they happen, each signed with the endpoint's secret.">
        <a class="btn primary" href={href('/webhooks/new')}>
          Add endpoint
        </a>
      </PageHead>
      {load.state === 'error' && load.error.code === 'plan_feature_unavailable' ? (
        <Empty title="Webhooks are not in this organization's plan.">
          <p>{load.error.message}</p>
          <p>The operator who runs this server can change the organization's plan.</p>
        </Empty>
      ) : (
        <PagedList
          load={load}
          what="endpoints"
          retry={reload}
          empty={{
            title: 'No webhook endpoints yet.',
            body: (
              <>
                <p>Add one to receive meetings, participants, recordings and attendance as they happen.</p>
                <a class="btn primary" href={href('/webhooks/new')}>
                  Add endpoint
                </a>
              </>
            ),
          }}
        >
          {(page) => (
            <>
              <AutoDisabledBanner endpoints={page.data} />
              <DataTable label="Webhook endpoints" columns={COLUMNS} rows={page.data} rowKey={(e) => e.id} />
            </>
          )}
        </PagedList>
      )}
    </>
  );
}

/** The event types an endpoint receives: every one (`*`, future types too), or those ticked. */
export function EventPicker({ catalog, value, onChange }: { catalog: Catalog; value: string[]; onChange: (v: string[]) => void }) {
  const all = value.includes(WILDCARD);
  const groups = new Map<string, string[]>();
  for (const t of catalog.types) {
    const g = t.split('.')[0]!;
    groups.set(g, [...(groups.get(g) ?? []), t]);
  }
  return (
    <fieldset class="events">
      <legend>Events</legend>
      <label class="check">
        <input type="radio" name="events-mode" checked={all} onChange={() => onChange([WILDCARD])} />
        Every event, including types added later
      </label>
      <label class="check">
        <input type="radio" name="events-mode" checked={!all} onChange={() => onChange(value.filter((v) => v !== WILDCARD))} />
        Only the types chosen below
      </label>
      {!all && (
        <div class="event-groups">
          {[...groups].map(([g, types]) => (
            <fieldset key={g} class="event-group">
              <legend>{g}</legend>
              {types.map((t) => (
                <label key={t} class="check small">
                  <input type="checkbox" name="event" value={t} checked={value.includes(t)} onChange={(e) => onChange((e.target as HTMLInputElement).checked ? [...value, t] : value.filter((v) => v !== t))} />
                  {t}
                </label>
              ))}
            </fieldset>
          ))}
        </div>
      )}
    </fieldset>
  );
}

/** The secret, shown once (on create and on rotate), with a copy button and what to do with it. */
export function SecretOnce({ secret, note }: { secret: string; note?: string | undefined }) {
  return <ShownOnce lead="Copy the signing secret now: it is not shown again." note={note ?? "Your receiver checks each delivery's Svc-Signature with it."} value={secret} label="Signing secret" copyLabel="Copy secret" />;
}

export function NewWebhook() {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>([WILDCARD]);
  const [created, setCreated] = useState<EndpointWithSecret | null>(null);
  const [catalog, reload] = useLoad(() => api.get<Catalog>(api.org('/webhooks/event-types')), 'catalog');
  const action = useAction();

  if (created) {
    return (
      <>
        <PageHead title="Endpoint added" sub={created.url} />
        <SecretOnce secret={created.secret} />
        <p>
          <a class="btn primary" href={href(`/webhooks/${created.id}`)}>
            Go to the endpoint
          </a>{' '}
          <a class="btn" href={href('/webhooks')}>
            All endpoints
          </a>
        </p>
      </>
    );
  }
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      setCreated(await api.post<EndpointWithSecret>(api.org('/webhooks'), { url: url.trim(), ...(description.trim() ? { description: description.trim() } : {}), events }));
    });
  };
  return (
    <>
      <PageHead title="Add a webhook endpoint" sub={<a href={href('/webhooks')}>← Webhooks</a>} />
      <Loaded load={catalog} what="the event catalog" retry={reload}>
        {(c) => (
          <form class="form panel" onSubmit={submit}>
            <label>
              <span>URL</span>
              <input name="url" type="url" required value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} placeholder="https://school.example/aula/webhooks" spellcheck={false} />
              <span class="hint">A public https:// address; it answers 2xx within 10 seconds.</span>
            </label>
            <label>
              <span>Description (optional)</span>
              <input name="description" value={description} maxLength={500} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
            </label>
            <EventPicker catalog={c} value={events} onChange={setEvents} />
            {action.error && <ErrorNote error={action.error} />}
            <div class="form-actions">
              <button class="btn primary" type="submit" disabled={action.busy || events.length === 0}>
                {action.busy ? 'Adding…' : 'Add endpoint'}
              </button>
              <a class="btn" href={href('/webhooks')}>
                Cancel
              </a>
            </div>
          </form>
        )}
      </Loaded>
    </>
  );
}
