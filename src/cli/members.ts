import type { MemberRole } from '../services/members.ts';
import { EX_USAGE, idArgument, json, print, requireOptions, UsageError, type Command } from './args.ts';
import { CommandFailure } from './control.ts';

/** The roles (services/members.ts's MEMBER_ROLES, which this module does not load for --help): the type keeps them the same. */
const ROLE_SET: Record<MemberRole, true> = { owner: true, admin: true };
const MEMBER_ROLES = Object.keys(ROLE_SET) as MemberRole[];

/** A password refused (exit 2, like a usage error, but no hint: the message says what to change). */
const refuse = (message: string) => new CommandFailure(message, EX_USAGE);

/** `aula members add|disable`. */
export const membersCommands: Command[] = [
  {
    name: 'members add',
    summary: 'Create an organization owner or admin, who signs in with email and password.',
    synopsis: `--org ORG_ID --email EMAIL --role ${MEMBER_ROLES.join('|')} [--json]`,
    description:
      'The password is read from standard input: asked twice without echo on a terminal, otherwise its first line.\n' +
      'At least 12 characters, and not easy to guess (zxcvbn-ts: common and breached passwords, words, names,\n' +
      'keyboard patterns, the email). Prints the member\'s id.',
    options: {
      org: { type: 'string', value: 'ORG_ID', help: 'the organization' },
      email: { type: 'string', value: 'EMAIL', help: 'the address they sign in with' },
      role: { type: 'string', value: 'ROLE', help: MEMBER_ROLES.join(' or ') },
      json,
    },
    examples: ["printf '%s\\n' \"$PASSWORD\" | aula members add --org \"$ORG\" --email head@school.example --role owner"],
    async run(o) {
      requireOptions(this, o, ['org', 'email', 'role']);
      if (!(MEMBER_ROLES as readonly string[]).includes(o.role as string)) throw new UsageError(`--role must be one of ${MEMBER_ROLES.join(', ')}`, this.name);
      const { z } = await import('zod');
      const email = (o.email as string).trim();
      if (!z.email().safeParse(email).success || email.length > 320) throw new UsageError(`--email is not an email address: ${o.email}`, this.name);

      const { MAX_PASSWORD_LENGTH, passwordLength, passwordProblem } = await import('../passwords.ts');
      const password = await readPassword(MAX_PASSWORD_LENGTH);
      if (passwordLength(password) === 0) throw refuse('no password given on standard input');
      const problem = passwordProblem(password, [email]);
      if (problem) throw refuse(problem);

      const { runOp } = await import('./ops.ts');
      const m = await runOp('members.add', { orgId: o.org as string, email, role: o.role as MemberRole, password });
      print(o, m, m.id);
      return 0;
    },
  },
  {
    name: 'members disable',
    summary: 'Disable an owner or admin: sign-in refused, every session revoked on every running member at once.',
    synopsis: 'MEMBER_ID [--json]',
    description: 'Disabling a disabled member changes nothing and succeeds; an unknown id exits 1.',
    positionals: [{ name: 'MEMBER_ID', help: 'the member (mem_…); --id MEMBER_ID works too' }],
    options: { id: { type: 'string', value: 'MEMBER_ID', help: 'the member, as a flag' }, json },
    async run(o, pos) {
      const id = idArgument(this, o, pos, 'member');
      const { runOp } = await import('./ops.ts');
      const r = await runOp('members.disable', { id });
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
