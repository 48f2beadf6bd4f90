import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { median } from './report.ts';
import { svgChart, type Panel, type Series } from './svg-chart.ts';

/** The parts of a class bench result (bench/class.ts, its JSON file) the chart reads. */
export interface ClassResult {
  startedAt: string;
  options: { seconds: number; phoneEvery: number; openMics: number };
  rows: {
    mode: 'view' | 'everything';
    students: number;
    workerCpu: number;
    loss: number;
    laptop: { videoMbpsMax: number } | null;
    phone: { videoMbpsMax: number } | null;
    allStudents: { videoMbpsMax: number; resumedVideoMax: number };
  }[];
}

const COLORS = { view: '#e08a1e', everything: '#2c6fbb', phone: '#2e9d5b' } as const;

/**
 * Worker CPU, forwarded video per student, resumed video consumers per student and loss against the
 * class size, receiver-driven (`view`) against receive-everything: the medians over the runs given.
 */
export function classChart(runs: ClassResult[]): string {
  type R = ClassResult['rows'][number];
  const series = (mode: R['mode'], pick: (r: R) => number | null | undefined, scale = 1): [number, number][] => {
    const byN = new Map<number, number[]>();
    for (const run of runs) {
      for (const r of run.rows) {
        const v = r.mode === mode ? pick(r) : null;
        if (v !== null && v !== undefined && Number.isFinite(v)) (byN.get(r.students) ?? byN.set(r.students, []).get(r.students)!).push(v * scale);
      }
    }
    return [...byN].sort((a, b) => a[0] - b[0]).map(([n, v]) => [n, median(v)]);
  };
  const xMax = Math.max(...runs.flatMap((r) => r.rows.map((x) => x.students)));
  const top = (pts: [number, number][][], floor: number) => {
    const m = Math.max(floor, ...pts.flat().map(([, y]) => y));
    return [1, 2, 5, 10, 20, 25, 50, 100, 200].find((s) => s >= m * 1.1) ?? m * 1.2;
  };
  const line = (name: string, color: string, points: [number, number][], dashed = false): Series => ({ name, color, dashed, points });

  const cpu = [series('view', (r) => r.workerCpu, 100), series('everything', (r) => r.workerCpu, 100)];
  const mbps = [series('view', (r) => r.laptop?.videoMbpsMax), series('view', (r) => r.phone?.videoMbpsMax), series('everything', (r) => r.allStudents.videoMbpsMax)];
  const resumed = [series('view', (r) => r.allStudents.resumedVideoMax), series('everything', (r) => r.allStudents.resumedVideoMax)];
  const loss = [series('view', (r) => r.loss, 100), series('everything', (r) => r.loss, 100)];
  const panels: Panel[] = [
    {
      title: 'Worker CPU',
      xLabel: 'students (and a teacher)',
      yLabel: 'worker CPU, % of one core',
      xMax,
      yMax: 110,
      yFormat: (y) => `${y}%`,
      series: [line('receiver-driven (view)', COLORS.view, cpu[0]!), line('receive everything', COLORS.everything, cpu[1]!, true)],
      hlines: [{ y: 80, label: '80% of a core' }],
    },
    {
      title: 'Forwarded video per student (the busiest)',
      xLabel: 'students (and a teacher)',
      yLabel: 'Mbit/s',
      xMax,
      yMax: top(mbps, 5),
      series: [line('laptop page, 16 tiles + screen', COLORS.view, mbps[0]!), line('phone page, 4 tiles + screen', COLORS.phone, mbps[1]!), line('receive everything', COLORS.everything, mbps[2]!, true)],
      hlines: [
        { y: 4.5, label: 'laptop target 4.5' },
        { y: 1.5, label: 'phone target 1.5' },
      ],
    },
    {
      title: 'Resumed video consumers per student (the most)',
      xLabel: 'students (and a teacher)',
      yLabel: 'consumers',
      xMax,
      yMax: top(resumed, 20),
      series: [line('receiver-driven (view)', COLORS.view, resumed[0]!), line('receive everything', COLORS.everything, resumed[1]!, true)],
      hlines: [{ y: 18, label: 'target 18' }],
    },
    {
      title: 'RTP loss at the receivers',
      xLabel: 'students (and a teacher)',
      yLabel: 'loss, %',
      xMax,
      yMax: top(loss, 2) <= 2 ? 2 : top(loss, 2),
      yFormat: (y) => `${y}%`,
      series: [line('receiver-driven (view)', COLORS.view, loss[0]!), line('receive everything', COLORS.everything, loss[1]!, true)],
      hlines: [{ y: 1, label: '1%' }],
    },
  ];
  const dates = runs.map((r) => r.startedAt.slice(0, 16).replace('T', ' ')).sort();
  const o = runs[0]?.options;
  return svgChart({
    title: 'A class on one mediasoup worker: what each page shows against receiving everything',
    subtitle: `${runs.length} run${runs.length === 1 ? '' : 's'}, ${dates[0]}${dates.length > 1 ? ` to ${dates.at(-1)}` : ''} UTC; teacher: camera (3 layers), screen (2 layers), microphone; students: camera (3 layers), microphone (${o?.openMics ?? '?'} open); ${o?.seconds ?? '?'} s per class`,
    columns: 2,
    panels,
    width: 1100,
    panelHeight: 320,
    footer: [`A phone page for every ${o?.phoneEvery || '-'}th student. bench/class.ts; the table is in bench/README.md, "The class scenario".`],
  });
}

// Redraw from saved results: node --import tsx bench/lib/class-chart.ts OUT.svg RESULT.json [RESULT.json...]
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [out, ...files] = process.argv.slice(2);
  if (!out || !files.length) {
    console.error('usage: node --import tsx bench/lib/class-chart.ts OUT.svg RESULT.json [RESULT.json...]');
    process.exit(2);
  }
  writeFileSync(out, classChart(files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as ClassResult)));
}
