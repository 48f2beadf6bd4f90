import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { median } from './report.ts';
import { svgChart, type Panel } from './svg-chart.ts';

/** The parts of a media bench result (bench/media.ts, its JSON file) the chart reads. */
export interface MediaResult {
  startedAt: string;
  options: { rounds: number; producers: Record<string, number>; seconds: number };
  binary: { atStart: { lddSrtp: string; sha256: string | null } };
  workers?: { srtp: string }[];
  capacity: { kind: string; bare: number | null; aula: number | null; ratio: number | null }[];
  summary: { kind: string; system: string; consumers: number; workerCpu: number; loss: number; p50Ms: number | null; p99Ms: number | null }[];
}

const COLORS = { bare: '#2c6fbb', aula: '#e08a1e' } as const;
const NAMES = { bare: 'bare mediasoup', aula: 'Aula (RoomMedia)' } as const;

/**
 * Worker CPU and loss against consumers, bare against Aula, audio and video side by side: the medians
 * over every run given (each run's summary is already a median over its rounds), with the 80% line
 * and each system's interpolated capacity (the median of the runs' capacities).
 */
export function mediaChart(runs: MediaResult[]): string {
  const kinds = ['audio', 'video'].filter((k) => runs.some((r) => r.summary.some((s) => s.kind === k)));
  const series = (kind: string, system: 'bare' | 'aula', field: 'workerCpu' | 'loss'): [number, number][] => {
    const byN = new Map<number, number[]>();
    for (const r of runs) for (const s of r.summary) if (s.kind === kind && s.system === system && Number.isFinite(s[field])) (byN.get(s.consumers) ?? byN.set(s.consumers, []).get(s.consumers)!).push(s[field]);
    return [...byN].sort((a, b) => a[0] - b[0]).map(([n, v]) => [n, median(v) * 100]);
  };
  const cap = (kind: string, system: 'bare' | 'aula') => {
    const v = runs.flatMap((r) => r.capacity.filter((c) => c.kind === kind).flatMap((c) => (c[system] === null ? [] : [c[system]!])));
    return v.length ? median(v) : null;
  };
  const ratio = (kind: string) => {
    const v = runs.flatMap((r) => r.capacity.filter((c) => c.kind === kind && c.ratio !== null).map((c) => c.ratio!));
    return v.length ? median(v) : null;
  };
  const xMaxOf = (kind: string) => Math.max(...runs.flatMap((r) => r.summary.filter((s) => s.kind === kind).map((s) => s.consumers)));
  const cpuPanels: Panel[] = kinds.map((kind) => {
    const xMax = xMaxOf(kind);
    const r = ratio(kind);
    return {
      title: `${kind === 'audio' ? 'Audio (Opus)' : 'Video (VP8, 720p layer)'}: worker CPU${r === null ? '' : `; Aula/bare at 80%: ${r.toFixed(2)}`}`,
      xLabel: `${kind} consumers on one worker`,
      yLabel: 'worker CPU, % of one core',
      xMax,
      yMax: 110,
      yFormat: (y) => `${y}%`,
      series: (['bare', 'aula'] as const).map((s) => ({ name: NAMES[s], color: COLORS[s], dashed: s === 'aula', points: series(kind, s, 'workerCpu') })),
      hlines: [{ y: 80, label: '80% of a core' }],
      vlines: (['bare', 'aula'] as const).flatMap((s) => {
        const c = cap(kind, s);
        return c === null ? [] : [{ x: c, label: `${s === 'bare' ? 'bare' : 'Aula'}: ${Math.round(c).toLocaleString('en-US')} at 80%`, color: COLORS[s] }];
      }),
    };
  });
  const lossPanels: Panel[] = kinds.map((kind) => {
    const pts = (['bare', 'aula'] as const).map((s) => series(kind, s, 'loss'));
    const top = Math.max(1, ...pts.flat().map(([, y]) => y));
    return {
      title: `${kind === 'audio' ? 'Audio' : 'Video'}: packets lost`,
      xLabel: `${kind} consumers on one worker`,
      yLabel: 'loss, %',
      xMax: xMaxOf(kind),
      yMax: top <= 2 ? 2 : top <= 10 ? 10 : top <= 50 ? 50 : 100,
      yFormat: (y) => `${y}%`,
      series: (['bare', 'aula'] as const).map((s, i) => ({ name: NAMES[s], color: COLORS[s], dashed: s === 'aula', points: pts[i]! })),
      hlines: [{ y: 1, label: '1%' }],
    };
  });
  const dates = runs.map((r) => r.startedAt.slice(0, 16).replace('T', ' ')).sort();
  const srtp = [...new Set(runs.flatMap((r) => (r.workers ?? []).map((w) => w.srtp)))].join('; ') || runs[0]?.binary.atStart.lddSrtp || '';
  return svgChart({
    title: 'One mediasoup worker on one core: bare Router against Aula\'s RoomMedia',
    subtitle: `medians of ${runs.reduce((n, r) => n + r.options.rounds, 0)} rounds (${runs.length} run${runs.length === 1 ? '' : 's'}), ${dates[0]}${dates.length > 1 ? ` to ${dates.at(-1)}` : ''} UTC; SRTP to every consumer; ${runs[0]?.options.producers.audio ?? '?'} audio / ${runs[0]?.options.producers.video ?? '?'} video producers; ${runs[0]?.options.seconds ?? '?'} s per step`,
    columns: kinds.length,
    panels: [...cpuPanels, ...lossPanels],
    width: kinds.length === 2 ? 1100 : 620,
    panelHeight: 320,
    footer: [`libsrtp2 of the workers: ${srtp}. bench/media.ts; the table is in bench/README.md, "The media scenario".`],
  });
}

// Redraw from saved results: node --import tsx bench/lib/media-chart.ts OUT.svg RESULT.json [RESULT.json...]
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [out, ...files] = process.argv.slice(2);
  if (!out || !files.length) {
    console.error('usage: node --import tsx bench/lib/media-chart.ts OUT.svg RESULT.json [RESULT.json...]');
    process.exit(2);
  }
  writeFileSync(out, mediaChart(files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as MediaResult)));
}
