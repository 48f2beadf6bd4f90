/**
 * A small SVG line chart (no dependencies): a grid of panels, each with numeric axes, a few series of
 * points and optional reference lines. Enough for the media bench's CPU and loss curves.
 */

export interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  points: [number, number][];
}

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  xMax: number;
  yMax: number;
  yFormat?: (y: number) => string;
  series: Series[];
  /** horizontal reference lines */
  hlines?: { y: number; label: string }[];
  /** vertical markers, e.g. an interpolated capacity */
  vlines?: { x: number; label: string; color: string }[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Round numbers for ticks: 1, 2 or 5 times a power of ten, about `n` of them. */
function ticks(max: number, n: number): number[] {
  const raw = max / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

const fmtTick = (v: number) => (Math.abs(v) >= 1000 ? v.toLocaleString('en-US') : String(v));

export function svgChart(o: { title: string; subtitle?: string; columns: number; panels: Panel[]; width?: number; panelHeight?: number; footer?: string[] }): string {
  const width = o.width ?? 1000;
  const pw = width / o.columns;
  const ph = o.panelHeight ?? 300;
  const rows = Math.ceil(o.panels.length / o.columns);
  const top = o.subtitle ? 62 : 44;
  const footer = o.footer ?? [];
  const height = top + rows * ph + 16 + footer.length * 16;
  const m = { l: 62, r: 18, t: 30, b: 46 };
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="17" font-weight="bold">${esc(o.title)}</text>`,
  ];
  if (o.subtitle) out.push(`<text x="${width / 2}" y="44" text-anchor="middle" font-size="12" fill="#555">${esc(o.subtitle)}</text>`);
  o.panels.forEach((p, i) => {
    const ox = (i % o.columns) * pw;
    const oy = top + Math.floor(i / o.columns) * ph;
    const w = pw - m.l - m.r;
    const h = ph - m.t - m.b;
    const X = (x: number) => ox + m.l + (x / p.xMax) * w;
    const Y = (y: number) => oy + m.t + h - (Math.min(y, p.yMax) / p.yMax) * h;
    const yf = p.yFormat ?? fmtTick;
    out.push(`<text x="${ox + m.l + w / 2}" y="${oy + 18}" text-anchor="middle" font-size="14" font-weight="bold">${esc(p.title)}</text>`);
    for (const t of ticks(p.yMax, 5)) {
      out.push(`<line x1="${X(0)}" x2="${X(p.xMax)}" y1="${Y(t)}" y2="${Y(t)}" stroke="#e4e4e4"/>`);
      out.push(`<text x="${X(0) - 6}" y="${Y(t) + 4}" text-anchor="end" fill="#444">${esc(yf(t))}</text>`);
    }
    for (const t of ticks(p.xMax, 6)) {
      out.push(`<line x1="${X(t)}" x2="${X(t)}" y1="${Y(0)}" y2="${Y(p.yMax)}" stroke="#f0f0f0"/>`);
      out.push(`<text x="${X(t)}" y="${Y(0) + 16}" text-anchor="middle" fill="#444">${esc(fmtTick(t))}</text>`);
    }
    out.push(`<rect x="${X(0)}" y="${Y(p.yMax)}" width="${w}" height="${h}" fill="none" stroke="#888"/>`);
    out.push(`<text x="${X(p.xMax / 2)}" y="${Y(0) + 34}" text-anchor="middle" fill="#222">${esc(p.xLabel)}</text>`);
    out.push(`<text transform="translate(${ox + 16} ${Y(p.yMax / 2)}) rotate(-90)" text-anchor="middle" fill="#222">${esc(p.yLabel)}</text>`);
    for (const l of p.hlines ?? []) {
      out.push(`<line x1="${X(0)}" x2="${X(p.xMax)}" y1="${Y(l.y)}" y2="${Y(l.y)}" stroke="#c0392b" stroke-dasharray="6 4"/>`);
      out.push(`<text x="${X(0) + 6}" y="${Y(l.y) - 5}" fill="#c0392b">${esc(l.label)}</text>`);
    }
    (p.vlines ?? []).forEach((l, k) => {
      out.push(`<line x1="${X(l.x)}" x2="${X(l.x)}" y1="${Y(0)}" y2="${Y(p.yMax)}" stroke="${l.color}" stroke-dasharray="2 3"/>`);
      // labels left of their line, near the bottom: the curves rise to the right, so that corner is empty
      out.push(`<text x="${X(l.x) - 4}" y="${Y(0) - 10 - k * 15}" text-anchor="end" fill="${l.color}">${esc(l.label)}</text>`);
    });
    p.series.forEach((s, k) => {
      const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
      if (pts.length) {
        out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2.2"${s.dashed ? ' stroke-dasharray="7 4"' : ''} points="${pts.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ')}"/>`);
        for (const [x, y] of pts) out.push(`<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3.2" fill="${s.color}"/>`);
      }
      const ly = Y(p.yMax) + 16 + k * 16;
      const lx = X(0) + 10;
      out.push(`<line x1="${lx}" x2="${lx + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2.2"${s.dashed ? ' stroke-dasharray="7 4"' : ''}/>`);
      out.push(`<text x="${lx + 28}" y="${ly}" fill="#222">${esc(s.name)}</text>`);
    });
  });
  footer.forEach((f, k) => out.push(`<text x="12" y="${top + rows * ph + 14 + k * 16}" fill="#555" font-size="11">${esc(f)}</text>`));
  out.push('</svg>');
  return out.join('\n') + '\n';
}
