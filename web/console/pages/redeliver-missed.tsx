import { useState } from 'preact/hooks';
import * as api from '../api.ts';
import { fromLocalInput, toLocalInput } from '../format.ts';
import { ConfirmButton } from '../ui/common.tsx';
import type { Delivery, Endpoint } from './webhook-types.ts';

/** At most this many log entries are read (the log keeps 30 days; a busy endpoint's failures fit). */
const MAX_READ = 2000;

/**
 * The events an endpoint missed since a time: those whose every attempt failed or that found it
 * disabled (SKIPPED), and that no later attempt or redelivery delivered. Tests are left out.
 */
export async function missedSince(endpointId: string, since: number): Promise<string[]> {
  const delivered = new Set<string>();
  const missed = new Map<string, string>(); // eventId -> its newest failed or skipped delivery
  const result = () => [...missed].filter(([eventId]) => !delivered.has(eventId)).map(([, id]) => id);
  let cursor: string | null = null;
  let read = 0;
  do {
    const page: api.Page<Delivery> = await api.list<Delivery>(api.org(`/webhooks/${api.enc(endpointId)}/deliveries`), { limit: 100, cursor });
    for (const d of page.data) {
      if (Date.parse(d.createdAt) < since) return result();
      if (d.trigger === 'TEST') continue;
      if (d.status === 'SUCCEEDED') delivered.add(d.eventId);
      else if (!missed.has(d.eventId)) missed.set(d.eventId, d.id);
    }
    read += page.data.length;
    cursor = page.nextCursor;
  } while (cursor && read < MAX_READ);
  return result();
}

/**
 * "Redeliver what it missed since…" (as Svix offers after re-enabling an endpoint): the events that
 * failed or were skipped since the time chosen are sent again, one redelivery each, oldest first.
 * The server has no route for it, so the console reads the log and redelivers them one by one.
 */
export function RedeliverMissed({ endpoint, onDone }: { endpoint: Endpoint; onDone: (text: string) => void }) {
  const start = endpoint.failingSince ?? endpoint.disabledAt ?? new Date(Date.now() - 24 * 3600_000).toISOString();
  const [since, setSince] = useState(toLocalInput(start));
  const [progress, setProgress] = useState<string | null>(null);
  return (
    <ConfirmButton
      label="Redeliver missed events…"
      title="Redeliver the events this endpoint missed?"
      body={
        <>
          <p>Every event since the time below whose deliveries all failed, or that found the endpoint disabled, is sent again once, oldest first. Your receiver should ignore events it already has (by their id).</p>
          <label>
            <span>Since</span>
            <input type="datetime-local" value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} />
          </label>
          {progress && (
            <p class="muted small" role="status">
              {progress}
            </p>
          )}
        </>
      }
      confirmLabel="Redeliver them"
      onConfirm={async () => {
        const from = Date.parse(fromLocalInput(since) ?? start);
        setProgress('Reading the delivery log…');
        const ids = (await missedSince(endpoint.id, from)).reverse();
        let ok = 0;
        for (const [i, id] of ids.entries()) {
          setProgress(`Redelivering ${i + 1} of ${ids.length}…`);
          const d = await api.post<Delivery>(api.org(`/webhooks/deliveries/${api.enc(id)}/redeliver`));
          if (d.status === 'SUCCEEDED') ok++;
        }
        setProgress(null);
        onDone(ids.length === 0 ? 'Nothing was missed since then.' : `Redelivered ${ids.length} missed ${ids.length === 1 ? 'event' : 'events'}: ${ok} delivered, ${ids.length - ok} failed again.`);
      }}
    />
  );
}
