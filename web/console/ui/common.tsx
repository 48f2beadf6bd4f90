import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api.ts';
import { href, takeHeadingFocus, useLocation } from '../router.ts';

/** A load's state: what a page draws while it waits, when it failed, and once it has the data. */
export type Load<T> = { state: 'loading' } | { state: 'error'; error: ApiError } | { state: 'ok'; data: T };

const asApiError = (e: unknown): ApiError => (e instanceof ApiError ? e : new ApiError(0, 'client_error', e instanceof Error ? e.message : String(e)));

/** Runs `fn` when `key` changes (a page's id and query); `reload` runs it again. A late answer for an old key is dropped. */
export function useLoad<T>(fn: () => Promise<T>, key: string): [Load<T>, () => void, (data: T) => void] {
  const [load, setLoad] = useState<Load<T>>({ state: 'loading' });
  const [n, setN] = useState(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const lastKey = useRef(key);
  useEffect(() => {
    let live = true;
    // a reload keeps what is shown until the new answer; another key (page, filters) shows the spinner
    const same = lastKey.current === key;
    lastKey.current = key;
    setLoad((l) => (l.state === 'ok' && same && n > 0 ? l : { state: 'loading' }));
    fnRef.current().then(
      (data) => live && setLoad({ state: 'ok', data }),
      (e: unknown) => live && setLoad({ state: 'error', error: asApiError(e) }),
    );
    return () => {
      live = false;
    };
  }, [key, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  const set = useCallback((data: T) => setLoad({ state: 'ok', data }), []);
  return [load, reload, set];
}

/** An action's state: running (its button disabled), and its error, shown beside it. */
export function useAction(): { busy: boolean; error: ApiError | null; run: (fn: () => Promise<void>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError(asApiError(e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

export function Loading({ what }: { what: string }) {
  return (
    <div class="state loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      <span>Loading {what}…</span>
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="state empty">
      <p class="state-title">{title}</p>
      {children && <div class="muted">{children}</div>}
    </div>
  );
}

/** The API's error as it said it: its message, the fields it refused, its code and request id for support. */
export function ErrorNote({ error, retry }: { error: ApiError; retry?: () => void }) {
  const fields = error.fields;
  return (
    <div class="error-note" role="alert">
      <p class="error-message">{error.message}</p>
      {fields.length > 0 && (
        <ul>
          {fields.map((f) => (
            <li key={f.field + f.message}>
              <code>{f.field}</code>: {f.message}
            </li>
          ))}
        </ul>
      )}
      <p class="error-meta">
        <code>{error.code}</code>
        {error.requestId && <> · request {error.requestId}</>}
        {retry && (
          <button type="button" class="link" onClick={retry}>
            Try again
          </button>
        )}
      </p>
    </div>
  );
}

/** Draws a load: the spinner, the error with a retry, or the content. */
export function Loaded<T>({ load, what, retry, children }: { load: Load<T>; what: string; retry?: () => void; children: (data: T) => ComponentChildren }) {
  if (load.state === 'loading') return <Loading what={what} />;
  if (load.state === 'error') return <ErrorNote error={load.error} {...(retry ? { retry } : {})} />;
  return <>{children(load.data)}</>;
}

export function PageHead({ title, sub, children }: { title: string; sub?: ComponentChildren; children?: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Aula console`;
  }, [title]);
  // in the commit that draws the heading, not after the next paint: nothing sees the new page before its heading has the focus
  useLayoutEffect(() => {
    if (takeHeadingFocus()) ref.current?.focus({ preventScroll: true });
  }, []);
  return (
    <header class="page-head">
      <div>
        <h1 ref={ref} tabIndex={-1} id="page-title">
          {title}
        </h1>
        {sub && <p class="muted page-sub">{sub}</p>}
      </div>
      {children && <div class="page-actions">{children}</div>}
    </header>
  );
}

const TONES: Record<string, string> = {
  ACTIVE: 'ok',
  LIVE: 'live',
  READY: 'ok',
  SUCCEEDED: 'ok',
  PRESENT: 'ok',
  FINAL: 'ok',
  SCHEDULED: 'info',
  RECORDING: 'live',
  PENDING: 'info',
  PROVISIONAL: 'info',
  LATE: 'warn',
  DISABLED: 'bad',
  DEACTIVATED: 'bad',
  FAILED: 'bad',
  ABSENT: 'bad',
  CANCELLED: 'muted',
  ENDED: 'muted',
  DELETED: 'muted',
  SKIPPED: 'muted',
  REVOKED: 'bad',
};

export function Badge({ value, tone }: { value: string; tone?: string }) {
  return <span class={`badge ${tone ?? TONES[value] ?? 'muted'}`}>{value.replaceAll('_', ' ').toLowerCase()}</span>;
}

/** Cursor paging: the cursor rides in the URL with the filters; "First page" drops it. */
export function Pager({ nextCursor, count }: { nextCursor: string | null; count: number }) {
  const { path, query } = useLocation();
  const onFirst = !query.get('cursor');
  if (onFirst && !nextCursor) return null;
  const next = new URLSearchParams(query);
  if (nextCursor) next.set('cursor', nextCursor);
  const first = new URLSearchParams(query);
  first.delete('cursor');
  return (
    <nav class="pager" aria-label="Pages">
      <span class="muted small">{count} on this page</span>
      <span class="pager-links">
        {!onFirst && (
          <a class="btn small" href={href(path, first)}>
            ← First page
          </a>
        )}
        {nextCursor && (
          <a class="btn small" href={href(path, next)} rel="next">
            Next page →
          </a>
        )}
      </span>
    </nav>
  );
}

/**
 * A destructive action behind a confirmation: the button opens a modal dialog (the browser's own, so
 * Escape closes it and the focus stays inside) that says what will happen; the action's error shows in
 * the dialog, which stays open for another try.
 */
export function ConfirmButton(props: {
  label: string;
  title: string;
  body: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => Promise<void>;
  danger?: boolean;
  small?: boolean;
  disabled?: boolean;
  /** The button's accessible name when its label alone is ambiguous in a list. */
  ariaLabel?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const action = useAction();
  const open = () => {
    action.clear();
    ref.current?.showModal();
  };
  const confirm = async () => {
    if (await action.run(props.onConfirm)) ref.current?.close();
  };
  return (
    <>
      <button type="button" class={`btn${props.danger ? ' danger' : ''}${props.small ? ' small' : ''}`} onClick={open} disabled={props.disabled} aria-label={props.ariaLabel}>
        {props.label}
      </button>
      <dialog ref={ref} class="dialog" aria-labelledby={titleId}>
        <h2 id={titleId}>{props.title}</h2>
        <div class="dialog-body">{props.body}</div>
        {action.error && <ErrorNote error={action.error} />}
        <div class="dialog-actions">
          <button type="button" class="btn" onClick={() => ref.current?.close()} autofocus>
            Cancel
          </button>
          <button type="button" class={`btn ${props.danger ? 'danger-solid' : 'primary'}`} onClick={confirm} disabled={action.busy}>
            {action.busy ? 'Working…' : props.confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** A short-lived line that says an action worked (read out by screen readers). */
export function useFlash(): [ComponentChildren, (text: string) => void] {
  const [text, setText] = useState<string | null>(null);
  useEffect(() => {
    if (!text) return;
    const t = setTimeout(() => setText(null), 6000);
    return () => clearTimeout(t);
  }, [text]);
  return [
    <p class={`flash${text ? '' : ' hidden'}`} role="status" aria-live="polite">
      {text}
    </p>,
    setText,
  ];
}

/** Copies a value; the button says it did. */
export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="btn small"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(value);
          setDone(true);
          setTimeout(() => setDone(false), 2000);
        } catch {
          // no clipboard permission: the value is on screen to select
        }
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

/** A select filter bound to one query parameter. */
export function FilterSelect({ name, label, options, value, onChange, labels }: { name: string; label: string; options: readonly string[]; value: string; onChange: (v: string | null) => void; labels?: Record<string, string> }) {
  return (
    <label class="filter">
      <span>{label}</span>
      <select name={name} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value || null)}>
        <option value="">Any</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {labels?.[o] ?? o.replaceAll('_', ' ').toLowerCase()}
          </option>
        ))}
      </select>
    </label>
  );
}

/** A value shown once (a secret, a key, a link) with a copy button: what it is, and what to do with it. */
export function ShownOnce({ lead, note, value, label, copyLabel }: { lead: string; note: ComponentChildren; value: string; label: string; copyLabel: string }) {
  return (
    <div class="banner warn secret" role="status">
      <p>
        <strong>{lead}</strong> {note}
      </p>
      <div class="secret-row">
        <code class="secret-value" aria-label={label}>
          {value}
        </code>
        <CopyButton value={value} label={copyLabel} />
      </div>
    </div>
  );
}

/** A table's card: scrolls sideways on a phone, and so takes the focus (arrow keys scroll it) with a name. */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

const NARROW = '(max-width: 800px)';

/** Whether the window is a phone's width (the layout's breakpoint), following changes. */
export function useNarrow(): boolean {
  const [narrow, setNarrow] = useState(() => matchMedia(NARROW).matches);
  useEffect(() => {
    const mq = matchMedia(NARROW);
    const on = () => setNarrow(mq.matches);
    mq.addEventListener('change', on);
    return () => mq.removeEventListener('change', on);
  }, []);
  return narrow;
}

/**
 * A list's filters: always shown on a wide screen; on a phone behind a button that says how many are on.
 * With `clear` (the list's address without filters), a "Clear filters" link while any is on.
 */
export function Filters({ active, clear, children: fields }: { active: number; clear?: string; children: ComponentChildren }) {
  const narrow = useNarrow();
  const [open, setOpen] = useState(active > 0);
  const children = (
    <>
      {fields}
      {clear && active > 0 && (
        <a class="btn small clear" href={clear}>
          Clear filters
        </a>
      )}
    </>
  );
  if (!narrow) return <div class="filters">{children}</div>;
  return (
    <div class="filters-box">
      <button type="button" class="btn small" aria-expanded={open} aria-controls="filters" onClick={() => setOpen(!open)}>
        Filters{active ? ` (${active} on)` : ''} <span aria-hidden="true">{open ? '▴' : '▾'}</span>
      </button>
      <div id="filters" class={`filters${open ? '' : ' hidden'}`}>
        {children}
      </div>
    </div>
  );
}
