import { useEffect, useState } from 'preact/hooks';

/**
 * The console's addresses are its state: the page, the item and every filter and cursor of a list live
 * in the URL (`/console/meetings?status=LIVE&cursor=…`), so a reload, the back button and a link sent to
 * a colleague all show the same thing. The history API moves between them without reloading.
 */

export const BASE = '/console';

export interface Location {
  /** The path under /console, starting with `/` (`/` for the overview). */
  path: string;
  query: URLSearchParams;
}

const listeners = new Set<() => void>();

/** After a move within the console, the next page's heading takes the focus (PageHead), so a screen reader says where it is. */
let headingFocusPending = false;
export function takeHeadingFocus(): boolean {
  const pending = headingFocusPending;
  headingFocusPending = false;
  return pending;
}

function read(): Location {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  return { path: p === '' ? '/' : p.replace(/\/+$/, '') || '/', query: new URLSearchParams(location.search) };
}

/** The console's address of a path and query: `href('/meetings', { status: 'LIVE' })`. */
export function href(path: string, query?: Record<string, string | null | undefined> | URLSearchParams): string {
  const q = query instanceof URLSearchParams ? new URLSearchParams(query) : new URLSearchParams();
  if (!(query instanceof URLSearchParams)) for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const s = q.toString();
  return `${BASE}${path === '/' ? '' : path}${s ? `?${s}` : ''}`;
}

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  // a new page, not a filter or a cursor of the same one (the focus stays on the filter then)
  headingFocusPending = !opts.replace && new URL(to, location.href).pathname !== location.pathname;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
  if (!opts.replace) window.scrollTo(0, 0);
}

/** Replaces some of the query (a filter changed: the cursor goes back to the first page). */
export function setQuery(change: Record<string, string | null>, opts: { keepCursor?: boolean } = {}): void {
  const { path, query } = read();
  for (const [k, v] of Object.entries(change)) {
    if (v === null || v === '') query.delete(k);
    else query.set(k, v);
  }
  if (!opts.keepCursor && !('cursor' in change)) query.delete('cursor');
  navigate(href(path, query));
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const update = () => setLoc(read());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return loc;
}

/** Links inside the console move with the history API; other links, and modified clicks, are the browser's. */
export function interceptLinks(): void {
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !(url.pathname === BASE || url.pathname.startsWith(`${BASE}/`))) return;
    // a link within the page (the skip link): the browser moves there and the focus with it
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    e.preventDefault();
    navigate(url.pathname + url.search);
  });
}

/** Matches `/webhooks/:id` against a path: the named segments, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const s = path.split('/');
  if (p.length !== s.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) out[p[i]!.slice(1)] = decodeURIComponent(s[i]!);
    else if (p[i] !== s[i]) return null;
  }
  return out;
}
