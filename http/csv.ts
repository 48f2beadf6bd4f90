/**
 * CSV as RFC 4180 writes it (CRLF lines, quotes doubled inside quoted fields). Every text field is
 * quoted, whatever it holds: a spreadsheet in a locale whose list separator is `;` (or a tab) splits an
 * unquoted field there, and the piece after the separator starts a new cell that may be a formula. A
 * text field that a spreadsheet would run as a formula (it starts with =, +, -, @, tab or CR) also gets
 * a leading apostrophe, so a name typed by a user cannot become a formula in a teacher's spreadsheet.
 * Numbers, empty values and the header's column names are written bare.
 */
export type CsvValue = string | number | null;

const FORMULA = /^[=+\-@\t\r]/;

function field(v: CsvValue): string {
  if (v === null) return '';
  if (typeof v === 'number') return String(v);
  const text = FORMULA.test(v) ? `'${v}` : v;
  return `"${text.replace(/"/g, '""')}"`;
}

export function csv(header: readonly string[], rows: readonly (readonly CsvValue[])[]): string {
  // the header's names are ours (letters only): written bare, as readers matching columns by name expect
  return [header.join(','), ...rows.map((r) => r.map(field).join(','))].join('\r\n') + '\r\n';
}

/** Whether the request asks for CSV rather than JSON (`Accept: text/csv`, with or without parameters). */
export const wantsCsv = (accept: string | undefined): boolean => !!accept && /(^|,)\s*text\/csv\s*(;|,|$)/i.test(accept);
