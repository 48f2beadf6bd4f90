import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import * as api from '../api.ts';
import { Empty, Loaded, Pager, TableWrap, useLoad, type Load } from './common.tsx';

/**
 * The console's lists, drawn one way: a page of the API's answer (`{ data, nextCursor }`) loaded for the
 * filters and cursor in the URL, shown as a table in its scrolling card with the Pager under it, or as the
 * list's own empty state. Pages say what differs (the route, the columns, the texts), not the markup.
 */

/** The named filters of a list as the URL has them ('' when unset), and its cursor. */
export function listQuery<K extends string>(query: URLSearchParams, names: readonly K[]): Record<K, string> & { cursor: string | null } {
  const f = Object.fromEntries(names.map((n) => [n, query.get(n) ?? ''])) as Record<K, string>;
  return { ...f, cursor: query.get('cursor') };
}

/** How many of a list's filters are on. */
export const activeCount = (values: readonly string[]): number => values.filter(Boolean).length;

/** One page of `path` for `query` (filters and cursor), `limit` a page; loaded again when the query changes. */
export function useList<T>(path: string, query: Record<string, string | null>, limit: number): [Load<api.Page<T>>, () => void, (page: api.Page<T>) => void] {
  return useLoad(() => api.list<T>(path, { ...query, limit }), `${path}?${JSON.stringify(query)}`);
}

export interface EmptyText {
  title: string;
  body?: ComponentChildren;
}

/** A loaded page of a list: the spinner, the error with a retry, the empty state, or the items with the Pager under them. */
export function PagedList<T>({ load, what, retry, empty, children }: { load: Load<api.Page<T>>; what: string; retry: () => void; empty: EmptyText; children: (page: api.Page<T>) => ComponentChildren }) {
  return (
    <Loaded load={load} what={what} retry={retry}>
      {(page) =>
        page.data.length === 0 ? (
          <Empty title={empty.title}>{empty.body}</Empty>
        ) : (
          <>
            {children(page)}
            <Pager nextCursor={page.nextCursor} count={page.data.length} />
          </>
        )
      }
    </Loaded>
  );
}

export interface Column<T> {
  /** The heading; with `hidden`, for screen readers only (a column of buttons). */
  head: ComponentChildren;
  hidden?: boolean;
  /** The class of the column's cells (wrap, nowrap, small, actions-cell…). */
  class?: string;
  /** The column names its row (`<th scope="row">`): the person in a table of people. */
  rowHeader?: boolean;
  cell: (row: T) => ComponentChildren;
  /** The column's cell in the table's last row (`<tfoot>`), a total. */
  foot?: ComponentChildren;
}

/** A table in its card (scrolling sideways on a phone), named by its caption and its region's label alike; `variant` is a class of its own for the table. */
export function DataTable<T>({ label, columns, rows, rowKey, variant }: { label: string; columns: (Column<T> | false)[]; rows: readonly T[]; rowKey: (row: T) => string; variant?: string }) {
  const cols = columns.filter((c): c is Column<T> => c !== false);
  const cell = (c: Column<T>, i: number, content: ComponentChildren) =>
    c.rowHeader ? (
      <th key={i} scope="row" class={c.class}>
        {content}
      </th>
    ) : (
      <td key={i} class={c.class}>
        {content}
      </td>
    );
  return (
    <TableWrap label={label}>
      <table class={variant ? `table ${variant}` : 'table'}>
        <caption class="sr-only">{label}</caption>
        <thead>
          <tr>
            {cols.map((c, i) => (
              <th key={i} scope="col">
                {c.hidden ? <span class="sr-only">{c.head}</span> : c.head}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={rowKey(r)}>{cols.map((c, i) => cell(c, i, c.cell(r)))}</tr>
          ))}
        </tbody>
        {cols.some((c) => c.foot !== undefined) && (
          <tfoot>
            <tr>{cols.map((c, i) => cell(c, i, c.foot))}</tr>
          </tfoot>
        )}
      </table>
    </TableWrap>
  );
}

/** A list's first cell: the item's name, a link to its page, with a line under it (the backend's id, a description) when it has one. */
export function NameCell({ to, name, sub }: { to: string; name: string; sub: string | null }) {
  return (
    <>
      <a class="strong" href={to}>
        {name}
      </a>
      {sub && <div class="muted small">{sub}</div>}
    </>
  );
}

/** A text filter and its Find button: starts from what the URL has, and hands over what was typed, trimmed (null when empty). */
export function SearchFilter({ id, name, label, value, type, onFind }: { id: string; name: string; label: string; value: string; type?: 'search'; onFind: (text: string | null) => void }) {
  const [text, setText] = useState(value);
  return (
    <form
      class="filter search"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        onFind(text.trim() || null);
      }}
    >
      <label for={id}>{label}</label>
      <span class="search-row">
        {/* an input without a type is one with a list to Preact's types: `list: undefined` adds nothing to the page */}
        <input id={id} name={name} {...(type ? { type } : { list: undefined })} value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} spellcheck={false} />
        <button class="btn small" type="submit">
          Find
        </button>
      </span>
    </form>
  );
}
