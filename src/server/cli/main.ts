// `aula`: the server and the commands that administer it. Only what --help needs is imported up front,
// so help, --version and usage errors answer at once; a command imports what it runs with.
import { readFileSync } from 'node:fs';
import { DatabaseInUseError } from '../../platform/db/index.ts';
import { PLAN_NAMES, type PlanName } from '../../core/plans.ts';
import { isScope, SCOPES, type Scope } from '../../core/scopes.ts';
import { EX_USAGE, helpText, hint, idArgument, json, parseCommand, print, requireOptions, UsageError, wantsHelp, type Command } from './args.ts';
import { CommandFailure } from './control.ts';
import { adminsCommands } from './admins.ts';
import type { KeyListing, OpArgs, OpName, OpResult } from './ops.ts';

async function runOp<K extends OpName>(op: K, args: OpArgs<K>): Promise<OpResult<K>> {
  return (await import('./ops.ts')).runOp(op, args);
}

export const VERSION: string = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).version;

const day = (iso: string | null) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : '-');

/** Columns padded to their widest cell. */
function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

const commands: Command[] = [
  {
    name: 'serve',
    summary: 'Start a server node; migrations run at start.',
    synopsis: '[--workers N] [--fail-fast]',
    description:
      'The database is AULA_DATABASE_URL, or the embedded one (PGlite) in AULA_DATA_DIR. Before starting it waits for\n' +
      'PostgreSQL (when AULA_DATABASE_URL is set) and Redis (when AULA_REDIS_URL is set) to answer, saying which does\n' +
      'not and trying again after 1, 2, 4 … 30 s. SIGTERM or SIGINT drains it. While it holds the embedded database,\n' +
      'the other aula commands run inside it.',
    options: {
      workers: { type: 'string', value: 'N', help: 'N node processes on one port, a dead one restarted (1 to 256, default 1);\nneeds AULA_DATABASE_URL and AULA_REDIS_URL (exit 78 without)' },
      'fail-fast': { type: 'boolean', help: 'exit 69 instead of retrying when PostgreSQL or Redis does not answer' },
    },
    async run(o) {
      const workers = (o.workers as string | undefined) ?? '1';
      const n = Number(workers);
      if (!/^\d+$/.test(workers) || n < 1 || n > 256) throw new UsageError('--workers must be a whole number from 1 to 256', 'serve');
      // a worker started by a primary skips this: the primary waited already
      const [{ loadConfig }, { waitForServices }, { serveNode, serveWorkers }] = await Promise.all([import('../../platform/config.ts'), import('./preflight.ts'), import('./serve.ts')]);
      if (!process.env.AULA_WORKER) await waitForServices(loadConfig(), { failFast: !!o['fail-fast'] });
      if (n > 1) return await serveWorkers(n);
      await serveNode();
      return -1;
    },
  },
  {
    name: 'migrate',
    summary: 'Apply the database migrations not applied yet.',
    synopsis: '[--json]',
    options: { json },
    async run(o) {
      const { applied } = await runOp('migrate', {});
      print(o, { applied }, applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date');
      return 0;
    },
  },
  {
    name: 'org create',
    summary: 'Create an organization and print its id.',
    synopsis: '--name NAME --plan PLAN [--json]',
    options: {
      name: { type: 'string', value: 'NAME', help: 'the organization’s name' },
      plan: { type: 'string', value: 'PLAN', help: `its plan: ${PLAN_NAMES.join(', ')}` },
      json,
    },
    examples: ['ORG=$(aula org create --name "Demo School" --plan pro)'],
    async run(o) {
      requireOptions(this, o, ['name', 'plan']);
      if (!(PLAN_NAMES as string[]).includes(o.plan as string)) throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(', ')}`, this.name);
      const org = await runOp('org.create', { name: o.name as string, plan: o.plan as PlanName });
      print(o, org, org.id);
      return 0;
    },
  },
  {
    name: 'org update',
    summary: 'Rename an organization, set the origins allowed to frame the room, or switch its AI notes.',
    synopsis: 'ORG_ID [--name NAME] [--allowed-origins ORIGINS] [--ai-notes on|off] [--json]',
    description: 'Prints the organization. Running nodes see new allowed origins at once (docs/sdk.md).',
    positionals: [{ name: 'ORG_ID', help: 'the organization (org_…); --id ORG_ID works too' }],
    options: {
      id: { type: 'string', value: 'ORG_ID', help: 'the organization, as a flag' },
      name: { type: 'string', value: 'NAME', help: 'its new name' },
      'allowed-origins': { type: 'string', value: 'ORIGINS', help: "comma-separated origins, like https://lms.school.example; '' clears the list" },
      'ai-notes': { type: 'string', value: 'on|off', help: 'whether its recordings get a transcript and lecture notes (docs/ai-notes.md)' },
      json,
    },
    examples: ['aula org update org_01j… --allowed-origins https://lms.school.example,http://localhost:3000', 'aula org update --id org_01j… --ai-notes off --json'],
    async run(o, pos) {
      const id = idArgument(this, o, pos, 'organization');
      if (o.name === undefined && o['allowed-origins'] === undefined && o['ai-notes'] === undefined) throw new UsageError('give --name, --allowed-origins or --ai-notes', this.name);
      if (o['ai-notes'] !== undefined && o['ai-notes'] !== 'on' && o['ai-notes'] !== 'off') throw new UsageError('--ai-notes must be on or off', this.name);
      let origins: string[] | undefined;
      if (o['allowed-origins'] !== undefined) {
        const given = (o['allowed-origins'] as string).split(',').map((x) => x.trim()).filter(Boolean);
        const { MAX_ALLOWED_ORIGINS, ORIGIN_RULE, parseOrigin } = await import('../../services/orgs.ts');
        const bad = given.find((x) => x.length > 300 || parseOrigin(x) === null);
        if (bad !== undefined) throw new UsageError(`--allowed-origins: ${ORIGIN_RULE} (${bad})`, this.name);
        if (given.length > MAX_ALLOWED_ORIGINS) throw new UsageError(`--allowed-origins: at most ${MAX_ALLOWED_ORIGINS} origins`, this.name);
        origins = [...new Set(given.map((x) => parseOrigin(x)!))];
      }
      const org = await runOp('org.update', {
        id,
        ...(o.name !== undefined ? { name: o.name as string } : {}),
        ...(origins ? { allowedOrigins: origins } : {}),
        ...(o['ai-notes'] !== undefined ? { aiNotes: o['ai-notes'] === 'on' } : {}),
      });
      print(o, org, `${org.id} ${org.name}: allowed origins ${org.allowedOrigins.join(', ') || '(none)'}; AI notes ${org.aiNotes ? 'on' : 'off'}`);
      return 0;
    },
  },
  {
    name: 'keys create',
    summary: 'Create an API key and print it (shown once; only its hash is stored).',
    synopsis: '--org ORG_ID --name NAME --scopes SCOPE,… [--json]',
    options: {
      org: { type: 'string', value: 'ORG_ID', help: 'the organization the key acts for' },
      name: { type: 'string', value: 'NAME', help: 'a label, to tell keys apart in aula keys list' },
      scopes: { type: 'string', value: 'SCOPE,…', help: `comma-separated; a :write scope implies its :read:\n${SCOPES.join(', ')}` },
      json,
    },
    examples: ['KEY=$(aula keys create --org "$ORG" --name backend --scopes users:write,meetings:write)'],
    async run(o) {
      requireOptions(this, o, ['org', 'name', 'scopes']);
      const scopes = (o.scopes as string).split(',').map((s) => s.trim()).filter(Boolean);
      const bad = scopes.filter((s) => !isScope(s));
      if (bad.length || !scopes.length) throw new UsageError(`unknown scopes: ${bad.join(', ') || '(none given)'}; known: ${SCOPES.join(', ')}`, this.name);
      const key = await runOp('keys.create', { orgId: o.org as string, name: o.name as string, scopes: scopes as Scope[] });
      print(o, key, key.key);
      if (!o.json && process.stdout.isTTY) process.stderr.write(`aula: ${key.id} created; the key above is shown only this once, so store it now\n`);
      return 0;
    },
  },
  {
    name: 'keys list',
    summary: 'List API keys: id, name, organization, scopes, status, when created and last used, and when they end (never the key).',
    synopsis: '[--org ORG_ID] [--json]',
    description:
      'Oldest first, revoked and expired keys included. KEY is the key’s first 12 characters, to tell keys apart. STATUS is ACTIVE, EXPIRING (rolled: valid until ENDS), EXPIRED or REVOKED (at ENDS). LAST USED is coarse: to about a minute.',
    options: { org: { type: 'string', value: 'ORG_ID', help: 'only this organization’s keys' }, json: { type: 'boolean', help: 'print one JSON object, { "data": [ … ] }' } },
    async run(o) {
      const res = await runOp('keys.list', o.org !== undefined ? { orgId: o.org as string } : {});
      const rows = res.data.map((k: KeyListing) => [k.id, k.name, k.orgId, `${k.prefix}…`, k.scopes.join(','), k.status, day(k.createdAt), day(k.lastUsedAt), day(k.revokedAt ?? k.expiresAt)]);
      print(o, res, rows.length ? table(['ID', 'NAME', 'ORG', 'KEY', 'SCOPES', 'STATUS', 'CREATED', 'LAST USED', 'ENDS'], rows) : `no API keys${o.org ? ` in ${o.org}` : ''}`);
      return 0;
    },
  },
  {
    name: 'keys revoke',
    summary: 'Revoke an API key; running nodes refuse it at once.',
    synopsis: 'KEY_ID [--json]',
    description: 'Revoking a revoked key changes nothing and succeeds; an unknown id exits 1.',
    positionals: [{ name: 'KEY_ID', help: 'the key’s id (key_…, from aula keys list); --id KEY_ID works too' }],
    options: { id: { type: 'string', value: 'KEY_ID', help: 'the key’s id, as a flag' }, json },
    async run(o, pos) {
      const id = idArgument(this, o, pos, 'key');
      const r = await runOp('keys.revoke', { id });
      print(o, r, r.alreadyRevoked ? `${id} was already revoked (${day(r.revokedAt)})` : `revoked ${id}`);
      return 0;
    },
  },
  ...adminsCommands,
  {
    name: 'cluster status',
    summary: 'Show the nodes, and each shard’s owner and fencing epoch (read-only).',
    synopsis: '[--json]',
    options: { json },
    async run(o) {
      const p = await runOp('cluster.status', {});
      const { formatPlacement } = await import('../../platform/cluster/placement.ts');
      print(o, p, formatPlacement(p));
      return 0;
    },
  },
];

const GROUPS: Record<string, string> = {
  org: 'Organizations.',
  keys: 'API keys, which the customer’s backend calls the API with.',
  admins: 'Organization owners and admins, who sign in with email and password.',
  cluster: 'The nodes of a cluster and where the shards are.',
};

function commandRows(cmds: Command[]): string {
  const width = Math.max(...cmds.map((c) => c.name.length)) + 3;
  return cmds.map((c) => `  ${c.name.padEnd(width)}${c.summary}`).join('\n');
}

function mainHelp(): string {
  return `aula ${VERSION}: the Aula live classroom server, and the commands that administer it.

usage: aula <command> [arguments]

commands:
${commandRows(commands)}
  ${'version'.padEnd(Math.max(...commands.map((c) => c.name.length)) + 3)}Print aula’s version (also aula --version).

Every command answers --help. Commands that print data print one JSON object on stdout with --json;
warnings and errors go to stderr.

The database is AULA_DATABASE_URL's, or else the embedded one in AULA_DATA_DIR (default .aula). While an
aula serve holds the embedded database, these commands run inside that server.

exit codes: 0 done; 1 the command failed (an unknown id, no such organization); 2 usage error; 69 a
service did not answer (serve --fail-fast); 75 the embedded database is busy and its server does not
answer; 78 bad configuration.
`;
}

function groupHelp(group: string): string {
  const cmds = commands.filter((c) => c.name.startsWith(group + ' '));
  return `${GROUPS[group]}\n\nusage: aula ${group} <command> [arguments]\n\ncommands:\n${commandRows(cmds)}\n\nRun 'aula ${group} <command> --help' for a command's arguments.\n`;
}

/** The command named by the first words of `argv`, and the rest; a usage error for an unknown one. */
function resolve(argv: string[]): { help: string } | { command: Command; args: string[] } {
  const [first, second] = argv;
  if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
    const rest = first === undefined ? [] : argv.slice(1);
    if (!rest.length) return { help: mainHelp() };
    const r = resolve(rest);
    return 'help' in r ? r : { help: helpText(r.command) };
  }
  if (first.startsWith('-')) throw new UsageError(`unknown option ${first}`, '');
  const single = commands.find((c) => c.name === first);
  if (single) return { command: single, args: argv.slice(1) };
  if (first in GROUPS) {
    if (second === undefined || second === '--help' || second === '-h') return { help: groupHelp(first) };
    const sub = commands.find((c) => c.name === `${first} ${second}`);
    if (!sub) throw new UsageError(`unknown command: ${first} ${second}`, first);
    return { command: sub, args: argv.slice(2) };
  }
  throw new UsageError(`unknown command: ${first}`, '');
}

export async function main(argv: string[]): Promise<number> {
  try {
    if (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version') {
      if (argv[0] === 'version' && wantsHelp(argv.slice(1))) process.stdout.write(`Print aula’s version.\n\nusage: aula version [--json]\n`);
      else process.stdout.write(argv.includes('--json') ? JSON.stringify({ version: VERSION }) + '\n' : `aula ${VERSION}\n`);
      return 0;
    }
    const r = resolve(argv);
    if ('help' in r) {
      process.stdout.write(r.help);
      return 0;
    }
    const parsed = parseCommand(r.command, r.args);
    if (parsed.help) {
      process.stdout.write(helpText(r.command));
      return 0;
    }
    return await r.command.run(parsed.values, parsed.positionals);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`aula: ${err.message}\n${hint(err.command)}\n`);
      return EX_USAGE;
    }
    if (err instanceof CommandFailure) {
      process.stderr.write(`aula: ${err.message}\n`);
      return err.exitCode;
    }
    const [{ ConfigError }, { EX_UNAVAILABLE, ServiceUnavailableError }] = await Promise.all([import('../../platform/config.ts'), import('./preflight.ts')]);
    if (err instanceof ServiceUnavailableError) return EX_UNAVAILABLE; // the line saying why is written
    if (err instanceof ConfigError || err instanceof DatabaseInUseError) {
      process.stderr.write(`aula: ${err.message}\n`);
      return err instanceof ConfigError ? 78 : 75;
    }
    throw err;
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
