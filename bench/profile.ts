/**
 * Summarizes a V8 .cpuprofile (from `npm run bench -- --profile`): self time by area (our folders,
 * each package, Node internals, GC, idle) and the functions with the most self time.
 *
 *   node --import tsx bench/profile.ts bench/results/profiles/CPU.*.cpuprofile [--top 40]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

// `... | head` closes the pipe early; that is not an error
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '40' } } });
if (!positionals.length) {
  console.error('usage: node --import tsx bench/profile.ts FILE.cpuprofile [--top N]');
  process.exit(2);
}

function area(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const own = /\/(src|http|actors|media|bench)\/(.*)$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

for (const file of positionals) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;

  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (n: ProfileNode) => {
    const f = n.callFrame;
    return `${f.functionName || '(anonymous)'}  ${area(f.url, f.functionName)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
  };
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  /** inclusive: each function counted once per stack it appears in */
  const inclusive = new Map<string, number>();
  for (const [id, t] of self) {
    const node = byId.get(id)!;
    const f = node.callFrame;
    const a = area(f.url, f.functionName);
    areas.set(a, (areas.get(a) ?? 0) + t);
    fns.set(label(node), (fns.get(label(node)) ?? 0) + t);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + t);
    }
  }
  const share = (t: number) => `${((t / busy) * 100).toFixed(1).padStart(5)}%`;
  console.log(`${file}\n  ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (shares below are of busy time)\n`);
  console.log('  self time by area');
  for (const [a, t] of [...areas].filter(([a]) => a !== '(idle)').sort((x, y) => y[1] - x[1]).slice(0, 25)) console.log(`  ${share(t)}  ${a}`);
  console.log('\n  functions by self time');
  for (const [n, t] of [...fns].filter(([n]) => !n.startsWith('(idle)')).sort((x, y) => y[1] - x[1]).slice(0, Number(values.top))) console.log(`  ${share(t)}  ${n}`);
  console.log('\n  functions by total time (self and callees; V8 inlining moves time into callers)');
  const skip = /^\((idle|root|program)\)/;
  for (const [n, t] of [...inclusive].filter(([n]) => !skip.test(n)).sort((x, y) => y[1] - x[1]).slice(0, Number(values.top))) console.log(`  ${share(t)}  ${n}`);
  console.log('');
}
