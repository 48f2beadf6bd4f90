// The CLI's argument handling: every command declares its options, and gets `--help`, strict flags
// and one-line usage errors (exit 2, with a hint naming the command's --help) from here.
import { parseArgs } from 'node:util';

/** Exit code of a usage error: an unknown command or flag, a missing or bad argument. */
export const EX_USAGE = 2;

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** The placeholder shown in help (`--org ID`). */
  value?: string;
  help: string;
}

export interface CommandSpec {
  /** The words after `aula`: `keys create`. */
  name: string;
  /** One line, for the command list. */
  summary: string;
  /** The synopsis after `aula <name> `, e.g. `--org ID --name NAME --scopes S1,S2 [--json]`. */
  synopsis: string;
  /** Paragraphs shown under the synopsis. */
  description?: string;
  options: Record<string, OptionSpec>;
  /** Positional arguments, in order (each optional unless the command says it is missing). */
  positionals?: { name: string; help: string }[];
  examples?: string[];
}

/** A usage error: printed as `aula: <message>` and a hint to run the command's --help; exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    /** The command whose --help the hint names (`keys create`), or '' for `aula --help`. */
    readonly command: string,
  ) {
    super(message);
  }
}

export type Values = Record<string, string | boolean | undefined>;
export type Parsed = { help: true } | { help: false; values: Values; positionals: string[] };

const isHelp = (a: string) => a === '--help' || a === '-h';

/** Whether the arguments ask for help (before any `--`): help wins over every other argument. */
export function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some(isHelp);
}

/**
 * Parses a command's arguments strictly: unknown options, options without their value, values given
 * to flags and extra positionals are usage errors, each said in one line.
 */
export function parseCommand(spec: CommandSpec, args: readonly string[]): Parsed {
  if (wantsHelp(args)) return { help: true };
  const options: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const [name, o] of Object.entries(spec.options)) options[name] = { type: o.type };
  const { tokens } = parseArgs({ args: [...args], options, strict: false, allowPositionals: true, tokens: true });
  const values: Values = {};
  const positionals: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') positionals.push(t.value);
    if (t.kind !== 'option') continue;
    const o = spec.options[t.name];
    if (!o) throw new UsageError(`unknown option ${t.rawName}`, spec.name);
    if (o.type === 'boolean') {
      if (t.value !== undefined) throw new UsageError(`${t.rawName} takes no value`, spec.name);
      values[t.name] = true;
      continue;
    }
    // `--org --name x` would take "--name" as the organization: a value that looks like an option must be given as --org=…
    if (t.value === undefined || (!t.inlineValue && t.value.startsWith('-') && t.value.length > 1)) {
      throw new UsageError(`${t.rawName} needs a value${o.value ? ` (${t.rawName} ${o.value})` : ''}`, spec.name);
    }
    values[t.name] = t.value;
  }
  const max = spec.positionals?.length ?? 0;
  if (positionals.length > max) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[max])}`, spec.name);
  return { help: false, values, positionals };
}

/** `a`, `a and b`, `a, b and c`. */
export function list(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** Throws a usage error naming every required option that is missing. */
export function requireOptions(spec: CommandSpec, values: Values, names: string[]): void {
  const missing = names.filter((n) => values[n] === undefined).map((n) => `--${n}`);
  if (missing.length) throw new UsageError(`missing ${list(missing)}`, spec.name);
}

export function helpText(spec: CommandSpec): string {
  const lines = [spec.summary, '', `usage: aula ${spec.name}${spec.synopsis ? ' ' + spec.synopsis : ''}`];
  if (spec.description) lines.push('', spec.description);
  const rows: [string, string][] = [];
  for (const p of spec.positionals ?? []) rows.push([p.name, p.help]);
  for (const [name, o] of Object.entries(spec.options)) rows.push([`--${name}${o.value ? ' ' + o.value : ''}`, o.help]);
  rows.push(['-h, --help', 'show this help']);
  const width = Math.max(...rows.map(([l]) => l.length)) + 2;
  lines.push('', 'arguments:');
  for (const [l, h] of rows) lines.push(`  ${l.padEnd(width)}${h.replaceAll('\n', '\n  ' + ' '.repeat(width))}`);
  if (spec.examples?.length) lines.push('', 'examples:', ...spec.examples.map((e) => `  ${e}`));
  return lines.join('\n') + '\n';
}

export function hint(command: string): string {
  return `Run 'aula ${command ? command + ' ' : ''}--help' for usage.`;
}

/** A command: its arguments (for parsing and --help) and what it does; returns the exit code (-1: keep running). */
export interface Command extends CommandSpec {
  run(values: Values, positionals: string[]): Promise<number>;
}

export const json = { type: 'boolean', help: 'print one JSON object on stdout' } as const;

/** Writes the result: one JSON object with --json, readable text otherwise. */
export function print(values: Values, obj: unknown, text: string): void {
  process.stdout.write(values.json ? JSON.stringify(obj) + '\n' : text + '\n');
}

/** The id of `aula keys revoke KEY_ID` (or the older `--id KEY_ID`). */
export function idArgument(spec: CommandSpec, values: Values, positionals: string[], what: string): string {
  const byFlag = values.id as string | undefined;
  const byPos = positionals[0];
  if (byFlag !== undefined && byPos !== undefined && byFlag !== byPos) throw new UsageError(`two ids given (${byPos} and --id ${byFlag})`, spec.name);
  const id = byPos ?? byFlag;
  if (!id) throw new UsageError(`missing the ${what} id (aula ${spec.name} ${spec.positionals![0]!.name})`, spec.name);
  return id;
}

