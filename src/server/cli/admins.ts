import type { AdminRole } from '../../services/admins.ts';
import { EX_USAGE, idArgument, json, print, requireOptions, UsageError, type Command } from './args.ts';
import { CommandFailure } from './control.ts';

/** The roles (services/admins.ts's ADMIN_ROLES, which this module does not load for --help): the type keeps them the same. */
const ROLE_SET: Record<AdminRole, true> = { owner: true, admin: true };
const ADMIN_ROLES = Object.keys(ROLE_SET) as AdminRole[];

/** A password refused (exit 2, like a usage error, but no hint: the message says what to change). */
const refuse = (message: string) => new CommandFailure(message, EX_USAGE);

/** `aula admins add|disable`. */
export const adminsCommands: Command[] = [
  {
    name: 'admins add',
    summary: 'Create an organization owner or admin, who signs in with email and password.',
    synopsis: `--org ORG_ID --email EMAIL --role ${ADMIN_ROLES.join('|')} [--json]`,
    description:
      'The password is read from standard input: asked twice without echo on a terminal, otherwise its first line.\n' +
      'At least 12 characters, and not easy to guess (zxcvbn-ts: common and breached passwords, words, names,\n' +
      'keyboard patterns, the email). Prints the admin\'s id.',
    options: {
      org: { type: 'string', value: 'ORG_ID', help: 'the organization' },
      email: { type: 'string', value: 'EMAIL', help: 'the address they sign in with' },
      role: { type: 'string', value: 'ROLE', help: ADMIN_ROLES.join(' or ') },
      json,
    },
    examples: ["printf '%s\\n' \"$PASSWORD\" | aula admins add --org \"$ORG\" --email head@school.example --role owner"],
    async run(o) {
      requireOptions(this, o, ['org', 'email', 'role']);
      if (!(ADMIN_ROLES as readonly string[]).includes(o.role as string)) throw new UsageError(`--role must be one of ${ADMIN_ROLES.join(', ')}`, this.name);
      const { z } = await import('zod');
      const email = (o.email as string).trim();
      if (!z.email().safeParse(email).success || email.length > 320) throw new UsageError(`--email is not an email address: ${o.email}`, this.name);

      const { MAX_PASSWORD_LENGTH, passwordLength, passwordProblem } = await import('../../platform/passwords.ts');
      const password = await readPassword(MAX_PASSWORD_LENGTH);
      if (passwordLength(password) === 0) throw refuse('no password given on standard input');
      const problem = passwordProblem(password, [email]);
      if (problem) throw refuse(problem);

      const { runOp } = await import('./ops.ts');
      const m = await runOp('admins.add', { orgId: o.org as string, email, role: o.role as AdminRole, password });
      print(o, m, m.id);
      return 0;
    },
  },
  {
    name: 'admins disable',
    summary: 'Disable an owner or admin: sign-in refused, every session revoked on every running node at once.',
    synopsis: 'ADMIN_ID [--json]',
    description: 'Disabling a disabled admin changes nothing and succeeds; an unknown id exits 1.',
    positionals: [{ name: 'ADMIN_ID', help: 'the owner or admin (adm_…); --id ADMIN_ID works too' }],
    options: { id: { type: 'string', value: 'ADMIN_ID', help: 'the owner or admin, as a flag' }, json },
    async run(o, pos) {
      const id = idArgument(this, o, pos, 'admin');
      const { runOp } = await import('./ops.ts');
      const r = await runOp('admins.disable', { id });
      print(o, r, r.alreadyDisabled ? `${id} was already disabled` : `disabled ${id}`);
      return 0;
    },
  },
];

/** On a terminal: asked twice without echo. Otherwise: the first line of standard input (without its line ending). */
async function readPassword(maxLength: number): Promise<string> {
  if (process.stdin.isTTY) {
    const first = await promptHidden('Password: ');
    const second = await promptHidden('Repeat the password: ');
    if (first !== second) throw refuse('the passwords do not match');
    return first;
  }
  let buf = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin as AsyncIterable<string>) {
    buf += chunk;
    if (buf.includes('\n') || buf.length > 4 * maxLength) break;
  }
  const nl = buf.indexOf('\n');
  return (nl >= 0 ? buf.slice(0, nl) : buf).replace(/\r$/, '');
}

/** Reads one line from the terminal in raw mode, echoing nothing; Ctrl-C aborts with exit code 130. */
function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve) => {
    let value = '';
    const finish = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          finish();
          return resolve(value);
        }
        if (ch === '\u0003') {
          finish();
          process.exit(130);
        }
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}
