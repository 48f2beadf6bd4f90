import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';

/** What a page says of one item (a meeting, a class): its facts in a card, its ids, its numbers. */

/** An item's facts in a card, under a heading for screen readers: `Fact`s, then anything `after` them. */
export function Details({ children, after }: { children: ComponentChildren; after?: ComponentChildren }) {
  const headingId = useId();
  return (
    <section class="panel" aria-labelledby={headingId}>
      <h2 id={headingId} class="sr-only">
        Details
      </h2>
      <dl class="facts">{children}</dl>
      {after}
    </section>
  );
}

/** One of an item's facts: what it is, and its value. */
export function Fact({ term, small, children }: { term: string; small?: boolean; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd class={small ? 'small' : undefined}>{children}</dd>
    </div>
  );
}

/** An item's id in the service and, when the backend gave one, its own. */
export function Ids({ id, externalId }: { id: string; externalId: string | null }) {
  return (
    <>
      <code>{id}</code>
      {externalId && (
        <>
          {' '}
          · yours: <code>{externalId}</code>
        </>
      )}
    </>
  );
}

/** A number with what it counts, in a card (a row of them in `.stats`). */
export function Stat({ label, value, sub }: { label: string; value: string; sub?: string }) {
  return (
    <div class="stat">
      <p class="stat-value">{value}</p>
      <p class="stat-label">{label}</p>
      {sub && <p class="muted small">{sub}</p>}
    </div>
  );
}
