import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { assets } from '../http/pages/assets.ts';

// The layout the README describes, held: src/ has one folder per layer and no file of its own, imports run
// one way (server > http > services > (actors, media) > platform > core; the browser only into core), and
// zod stays out of the browser bundle. The rule itself (.dependency-cruiser.cjs) runs in CI as `npm run deps`;
// here it is shown to refuse a wrong-way import and a circle, and to pass the real tree.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEPCRUISE = join(ROOT, 'node_modules/.bin/depcruise');

/** Runs the project's dependency rule over `files` (path -> source) laid out in a fresh folder. */
function cruise(files: Record<string, string>): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'aula-layout-'));
  try {
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext' } }));
    for (const [path, source] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), source);
    }
    const r = spawnSync(DEPCRUISE, ['--config', join(ROOT, '.dependency-cruiser.cjs'), ...new Set(Object.keys(files).map((p) => p.split('/')[0]!))], { cwd: dir, encoding: 'utf8' });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

t.test('src/ holds folders only: one per layer', async (t) => {
  const entries = readdirSync(join(ROOT, 'src'), { withFileTypes: true });
  t.same(entries.filter((e) => !e.isDirectory()).map((e) => e.name), [], 'no file directly in src/');
  t.same(entries.map((e) => e.name).sort(), ['core', 'platform', 'server', 'services']);
});

t.test('the dependency rule refuses a wrong-way import, type-only ones too, and a circle', async (t) => {
  const right = cruise({
    'src/core/words.ts': 'export const WORD = 1;\n',
    'src/platform/db.ts': "import { WORD } from '../core/words.ts';\nexport const DB = WORD;\n",
    'src/services/users.ts': "import { DB } from '../platform/db.ts';\nexport const USERS = DB;\n",
  });
  t.equal(right.status, 0, `imports that run down pass\n${right.out}`);

  const up = cruise({
    'src/core/words.ts': "import type { Db } from '../platform/db.ts';\nexport type Words = Db;\n",
    'src/platform/db.ts': 'export type Db = number;\n',
  });
  t.not(up.status, 0, 'core importing platform (a type-only import) fails');
  t.match(up.out, /core-imports-up: src\/core\/words\.ts → src\/platform\/db\.ts/);

  const media = cruise({
    'media/room.ts': "import { MEETING } from '../actors/meeting.ts';\nexport const ROOM = MEETING;\n",
    'actors/meeting.ts': 'export const MEETING = 1;\n',
  });
  t.match(media.out, /media-imports-up: media\/room\.ts → actors\/meeting\.ts/, 'media does not import actors (they are side by side)');

  const web = cruise({
    'web/room/api.ts': "import type { Session } from '../../src/services/sessions.ts';\nexport type S = Session;\n",
    'src/services/sessions.ts': 'export type Session = number;\n',
  });
  t.match(web.out, /web-imports-core-only: web\/room\/api\.ts → src\/services\/sessions\.ts/, 'the browser imports only core');

  const circle = cruise({
    'src/services/a.ts': "import { B } from './b.ts';\nexport const A = () => B;\n",
    'src/services/b.ts': "import { A } from './a.ts';\nexport const B = () => A;\n",
  });
  t.match(circle.out, /no-circular/, 'a circle fails');
});

t.test('the dependency rule passes the tree as it is', async (t) => {
  const r = spawnSync('npm', ['run', '-s', 'deps'], { cwd: ROOT, encoding: 'utf8' });
  t.equal(r.status, 0, `${r.stdout}${r.stderr}`);
});

t.test('the room bundle holds no zod', async (t) => {
  const { room } = await assets();
  t.ok(room.inputs.some((i) => i.includes('web/room/main.tsx')), 'the inputs are the bundle\'s');
  t.same(room.inputs.filter((i) => i.includes('node_modules/zod')), [], 'no zod module in it');
  t.same(room.inputs.filter((i) => /(^|\/)(actors|media|http)\/|src\/(platform|services|server)\//.test(i)), [], 'and nothing of the server beyond src/core');
});
