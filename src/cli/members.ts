import { parseArgs } from 'node:util';
import { z } from 'zod';
import { systemClock } from '../clock.ts';
import { LocalBus } from '../cluster/bus.ts';
import { withDb } from './db.ts';
import { AppError } from '../errors.ts';
import { MAX_PASSWORD_LENGTH, passwordLength, passwordProblem } from '../passwords.ts';
import { MEMBER_ROLES, Members, type MemberRole } from '../services/members.ts';

export const MEMBERS_USAGE = `  members add --org ID --email E --role ${MEMBER_ROLES.join('|')} [--json]
                                            create an organization owner or admin who signs in with email and
                                            password; the password is read from standard input (prompted twice,
                                            without echo, on a terminal; otherwise its first line)
  members disable --id MEMBER_ID [--json]   disable an owner or admin: sign-in refused, every session revoked
                                            on every running member at once`;

class MembersUsageError extends Error {}
class InputError extends Error {}

/** `aula members add|disable`: returns the exit code. Configuration and database failures are left to main's handler. */
export async function membersCommand(sub: string | undefined, args: string[]): Promise<number> {
  try {
    if (sub === 'add') return await add(args);
    if (sub === 'disable') return await disable(args);
    throw new MembersUsageError(sub ? `unknown command: members ${sub}` : 'members needs a subcommand');
  } catch (err) {
    if (err instanceof MembersUsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`aula: ${(err as Error).message}\n\nusage:\n${MEMBERS_USAGE}\n`);
      return 2;
    }
    if (err instanceof InputError) {
      process.stderr.write(`aula: ${err.message}\n`);
      return 2;
    }
    if (err instanceof AppError && (err.code === 'not_found' || err.code === 'member_exists')) {
      process.stderr.write(`aula: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

async function add(args: string[]): Promise<number> {
  const o = parseArgs({
    args,
    options: { org: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, json: { type: 'boolean', default: false } },
    strict: true,
  }).values;
  if (!o.org || !o.email || !o.role) throw new MembersUsageError('--org, --email and --role are required');
  if (!(MEMBER_ROLES as readonly string[]).includes(o.role)) throw new MembersUsageError(`--role must be one of ${MEMBER_ROLES.join(', ')}`);
  const email = o.email.trim();
  if (!z.email().safeParse(email).success || email.length > 320) throw new MembersUsageError(`--email is not an email address: ${o.email}`);

  const password = await readPassword();
  if (passwordLength(password) === 0) throw new InputError('no password given on standard input');
  const problem = passwordProblem(password, [email]);
  if (problem) throw new InputError(problem);

  const m = await withDb((sql) => new Members(sql, systemClock, new LocalBus()).create(sql, { orgId: o.org!, email, role: o.role as MemberRole, password }));
  process.stdout.write(o.json ? JSON.stringify({ id: m.id, orgId: m.orgId, email: m.email, role: m.role, createdAt: m.createdAt }) + '\n' : m.id + '\n');
  return 0;
}

async function disable(args: string[]): Promise<number> {
  const o = parseArgs({ args, options: { id: { type: 'string' }, json: { type: 'boolean', default: false } }, strict: true }).values;
  if (!o.id) throw new MembersUsageError('--id is required');
  // the revoked sessions are published on the members' bus, so running members drop them at once
  const disabled = await withDb((sql, _applied, bus) => new Members(sql, systemClock, bus()).disable(sql, o.id!));
  process.stdout.write(o.json ? JSON.stringify({ id: o.id, disabled }) + '\n' : `${disabled ? `disabled ${o.id}` : `${o.id} was not active`}\n`);
  return 0;
}

/** On a terminal: asked twice without echo. Otherwise: the first line of standard input (without its line ending). */
async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) {
    const first = await promptHidden('Password: ');
    const second = await promptHidden('Repeat the password: ');
    if (first !== second) throw new InputError('the passwords do not match');
    return first;
  }
  let buf = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin as AsyncIterable<string>) {
    buf += chunk;
    if (buf.includes('\n') || buf.length > 4 * MAX_PASSWORD_LENGTH) break;
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
