/** How the console writes times, sizes and lengths: in the browser's locale, dates with their time. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
const dayShort = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
const num = new Intl.NumberFormat();

export const when = (iso: string | null | undefined): string => (iso ? dateTime.format(new Date(iso)) : '—');
export const day = (iso: string | null | undefined): string => (iso ? dateOnly.format(new Date(iso)) : '—');
export const time = (iso: string | null | undefined): string => (iso ? timeOnly.format(new Date(iso)) : '—');
/** A UTC date (`2026-11-26`) as the usage report gives it. */
export const utcDay = (date: string): string => dayShort.format(new Date(`${date}T00:00:00Z`));
export const count = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : num.format(n));

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h) return `${h} h ${m} min`;
  if (m) return `${m} min ${s % 60 ? `${s % 60} s` : ''}`.trim();
  return `${s} s`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 10 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

/** A datetime-local input's value (local time) as ISO, and back. */
export function fromLocalInput(v: string): string | null {
  if (!v) return null;
  const t = new Date(v);
  return Number.isNaN(t.getTime()) ? null : t.toISOString();
}
export function toLocalInput(iso: string | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
