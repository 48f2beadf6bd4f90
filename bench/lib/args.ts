import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;
const HELP = { help: { type: 'boolean', short: 'h', default: false } } as const;

/**
 * The options of one bench runner: `--help` prints `usage` and exits 0; `--scenario <name>` (how
 * `npm run bench` picked this runner) is dropped; unknown options exit 2 with the usage. `int` reads
 * an integer option or exits 2 naming it.
 */
export function benchArgs<const O extends Options>(usage: string, options: O, scenario?: string) {
  const argv = process.argv.slice(2);
  const args = scenario ? argv.filter((a, i) => !(a === '--scenario' || a === `--scenario=${scenario}` || (argv[i - 1] === '--scenario' && a === scenario))) : argv;
  const config = { args, options: { ...options, ...HELP }, strict: true } as const;
  let parsed: ReturnType<typeof parseArgs<typeof config>>;
  try {
    parsed = parseArgs(config);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${usage}`);
    process.exit(2);
  }
  if ((parsed.values as { help?: boolean }).help) {
    console.log(usage);
    process.exit(0);
  }
  const int = (name: string, v: string, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) {
      console.error(`--${name} must be an integer >= ${min}\n\n${usage}`);
      process.exit(2);
    }
    return n;
  };
  return { opt: parsed.values, int };
}
