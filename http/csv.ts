/**
 * CSV as RFC 4180 writes it (CRLF lines, fields quoted when they hold a comma, quote or line break).
 * A text field that a spreadsheet would run as a formula (it starts with =, +, -, @, tab or CR) gets a
 * leading apostrophe, so a name typed by a user cannot become a formula in a teacher's spreadsheet.
 */
export type CsvValue = string | number | null;

const FORMULA = /^[=+\-@\t\r]/;

function field(v: CsvValue): string {
  if (v === null) return '';
  if (typeof v === 'number') return String(v);
  const text = FORMULA.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csv(header: readonly string[], rows: readonly (readonly CsvValue[])[]): string {
  return [header, ...rows].map((r) => r.map(field).join(',')).join('\r\n') + '\r\n';
}

/** Whether the request asks for CSV rather than JSON (`Accept: text/csv`, with or without parameters). */
export const wantsCsv = (accept: string | undefined): boolean => !!accept && /(^|,)\s*text\/csv\s*(;|,|$)/i.test(accept);
