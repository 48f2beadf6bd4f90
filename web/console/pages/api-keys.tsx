import { useState } from 'preact/hooks';
import { SCOPES } from '../../../src/core/scopes.ts';
import * as api from '../api.ts';
import { when } from '../format.ts';
import { href, useLocation } from '../router.ts';
import { Badge, ConfirmButton, Empty, ErrorNote, PageHead, ShownOnce, useAction, useFlash } from '../ui/common.tsx';
import { DataTable, listQuery, PagedList, useList } from '../ui/list.tsx';

interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  status: 'ACTIVE' | 'EXPIRING' | 'EXPIRED' | 'REVOKED';
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  expiresAt: string | null;
}
interface KeyWithSecret extends ApiKey {
  key: string;
}

/** How long a rolled key keeps working, as Stripe's dashboard offers (the route takes 0 to 7 days). */
const OVERLAPS: [number, string][] = [
  [0, 'Stop the old key now'],
  [3600, '1 hour'],
  [24 * 3600, '24 hours'],
  [3 * 24 * 3600, '3 days'],
  [7 * 24 * 3600, '7 days'],
];

/** The key itself, once: on create and on roll. */
function KeyOnce({ k, note }: { k: KeyWithSecret; note: string }) {
  return <ShownOnce lead={`Copy the key "${k.name}" now: it is not shown again.`} note={note} value={k.key} label="API key" copyLabel="Copy key" />;
}

/** API keys (GET/POST /orgs/:orgId/api-keys, DELETE …/:id, POST …/:id/roll): create, list, revoke, roll. */
export function ApiKeys() {
  const [load, reload] = useList<ApiKey>(api.org('/api-keys'), listQuery(useLocation().query, []), 50);
  const [shown, setShown] = useState<{ k: KeyWithSecret; note: string } | null>(null);
  const [creating, setCreating] = useState(false);
  const [flash, say] = useFlash();

  if (load.state === 'error' && load.error.code === 'route_not_found') {
    return (
      <>
        <PageHead title="API keys" />
        <Empty title="This server does not manage API keys from the console yet.">Until the server has the API keys routes, the operator creates keys with `aula keys create`.</Empty>
      </>
    );
  }
  return (
    <>
      <PageHead title="API keys" sub="Keys your backend calls the API with. Each is shown once, when created or rolled.">
        <button type="button" class="btn primary" aria-expanded={creating} onClick={() => setCreating(!creating)}>
          Create key
        </button>
      </PageHead>
      {flash}
      {shown && <KeyOnce k={shown.k} note={shown.note} />}
      {creating && (
        <CreateKey
          onCreated={(k) => {
            setCreating(false);
            setShown({ k, note: 'Keep it on your server only: never in a browser or an app.' });
            reload();
          }}
        />
      )}
      <PagedList load={load} what="API keys" retry={reload} empty={{ title: 'No API keys yet.', body: 'Create one for your backend to provision users, schedule meetings and mint join links.' }}>
        {(page) => (
          <DataTable
            label="API keys"
            rows={page.data}
            rowKey={(k) => k.id}
            columns={[
              {
                head: 'Name',
                class: 'key-name',
                cell: (k) => (
                  <>
                    <span class="strong">{k.name}</span>
                    <div class="muted small nowrap">
                      <code>{k.prefix}…</code>
                    </div>
                  </>
                ),
              },
              { head: 'Scopes', class: 'small scopes-cell', cell: (k) => (k.scopes.length === SCOPES.length ? 'every scope' : k.scopes.join(', ')) },
              {
                head: 'Status',
                cell: (k) => (
                  <>
                    <Badge value={k.status} tone={k.status === 'EXPIRING' ? 'warn' : undefined} />
                    {k.expiresAt && k.status === 'EXPIRING' && <div class="muted small">until {when(k.expiresAt)}</div>}
                    {k.revokedAt && <div class="muted small">{when(k.revokedAt)}</div>}
                  </>
                ),
              },
              { head: 'Created', class: 'nowrap', cell: (k) => when(k.createdAt) },
              { head: 'Last used', class: 'nowrap', cell: (k) => (k.lastUsedAt ? when(k.lastUsedAt) : <span class="muted">never</span>) },
              {
                head: 'Actions',
                hidden: true,
                class: 'actions-cell',
                cell: (k) => (
                  <div class="cell-actions">
                    {k.status === 'ACTIVE' && (
                      <RollKey
                        k={k}
                        onRolled={(r) => {
                          setShown({ k: r, note: `The old key ${r.previousExpiresAt ? `works until ${when(r.previousExpiresAt)}` : 'has stopped working'}.` });
                          reload();
                        }}
                      />
                    )}
                    {(k.status === 'ACTIVE' || k.status === 'EXPIRING') && (
                      <ConfirmButton
                        small
                        danger
                        label="Revoke"
                        ariaLabel={`Revoke ${k.name} (${k.prefix}…)`}
                        title={`Revoke "${k.name}"?`}
                        body={<p>Every request with this key is refused from now on, on every node. This cannot be undone: a backend still using it stops working.</p>}
                        confirmLabel="Revoke key"
                        onConfirm={async () => {
                          await api.del(api.org(`/api-keys/${api.enc(k.id)}`));
                          say(`"${k.name}" is revoked.`);
                          reload();
                        }}
                      />
                    )}
                  </div>
                ),
              },
            ]}
          />
        )}
      </PagedList>
      <p class="small muted">
        Changes to keys are in the <a href={href('/audit-log', { action: 'api_key.*' })}>audit log</a>.
      </p>
    </>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: KeyWithSecret) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['users:write', 'meetings:write']);
  const action = useAction();
  return (
    <form
      class="form panel"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => onCreated(await api.post<KeyWithSecret>(api.org('/api-keys'), { name: name.trim(), scopes })));
      }}
    >
      <h2>New API key</h2>
      <label>
        <span>Name</span>
        <input name="name" required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} placeholder="Production backend" />
      </label>
      <fieldset class="scopes">
        <legend>Scopes (a write scope includes its read)</legend>
        {SCOPES.map((s) => (
          <label key={s} class="check small">
            <input type="checkbox" name="scope" value={s} checked={scopes.includes(s)} onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, s] : scopes.filter((x) => x !== s))} />
            {s}
          </label>
        ))}
      </fieldset>
      {action.error && <ErrorNote error={action.error} />}
      <div class="form-actions">
        <button class="btn primary" type="submit" disabled={action.busy || scopes.length === 0}>
          {action.busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
    </form>
  );
}

function RollKey({ k, onRolled }: { k: ApiKey; onRolled: (r: KeyWithSecret & { previousExpiresAt: string | null }) => void }) {
  const [overlap, setOverlap] = useState(24 * 3600);
  return (
    <ConfirmButton
      small
      label="Roll"
      ariaLabel={`Roll ${k.name} (${k.prefix}…)`}
      title={`Roll "${k.name}"?`}
      body={
        <>
          <p>A new key with the same name and scopes is made and shown once. The old key keeps working for the time you choose, so your backend can switch without a gap.</p>
          <label>
            <span>The old key works for</span>
            <select value={overlap} onChange={(e) => setOverlap(Number((e.target as HTMLSelectElement).value))}>
              {OVERLAPS.map(([v, l]) => (
                <option key={v} value={v}>
                  {l}
                </option>
              ))}
            </select>
          </label>
        </>
      }
      confirmLabel="Roll key"
      onConfirm={async () => {
        const r = await api.post<KeyWithSecret & { previous: ApiKey }>(api.org(`/api-keys/${api.enc(k.id)}/roll`), { expiresInSeconds: overlap });
        onRolled({ ...r, previousExpiresAt: overlap > 0 ? r.previous.expiresAt : null });
      }}
    />
  );
}
