import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import type { Test } from 'tap';
import { CHROMIUM, launchBrowser } from './browser.ts';

const run = promisify(execFile);

/** `ip` (iproute2) with these arguments; rejects with what it printed. */
async function ip(...args: string[]): Promise<string> {
  try {
    return (await run('ip', args)).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
  }
}

/**
 * A school's network for a test: a network namespace joined to this host by a veth pair on a subnet of
 * its own (10.77.N.0/24, N random). Inside it, 127.0.0.1 is the namespace's own loopback, so of this
 * host it reaches only what listens on the host side's address (`hostIp`): a node listening on 0.0.0.0,
 * a relay listening there. Its default route points at the host side (nothing is forwarded beyond it).
 * Removed at teardown. Needs root and iproute2 (netem and a firewall are not needed).
 */
export interface Netns {
  /** The namespace's name (for `ip netns exec`). */
  name: string;
  /** The host side of the veth pair, and its address. */
  hostIf: string;
  hostIp: string;
  /** The namespace side, and its current address. */
  nsIf: string;
  nsIp: string;
  /** The subnet's first three octets (`10.77.N`). */
  subnet: string;
  /**
   * The namespace side moves to another address of the subnet (the next free one unless given), as a
   * device does when its Wi-Fi hands it a new lease: the new one is added, then the old one removed;
   * the routes stay. Resolves with the new address.
   */
  renumber(to?: string): Promise<string>;
  /** Runs a command inside the namespace. */
  exec(cmd: string, ...args: string[]): Promise<string>;
}

export async function createNetns(t: Test): Promise<Netns> {
  const id = randomBytes(3).toString('hex');
  const name = `aula-${id}`;
  // interface names are at most 15 characters
  const hostIf = `avh${id}`;
  const nsIf = `avn${id}`;
  // a subnet no interface of this host has (another test's namespace may hold one)
  const taken = await ip('-4', '-o', 'addr', 'show');
  let subnet = '';
  do subnet = `10.77.${1 + Math.floor(Math.random() * 250)}`;
  while (taken.includes(` ${subnet}.`));
  const hostIp = `${subnet}.1`;
  let nsIp = `${subnet}.2`;
  const teardown = async () => {
    // deleting the namespace destroys its end of the pair, and with it the host's end
    await ip('netns', 'del', name).catch(() => {});
    await ip('link', 'del', hostIf).catch(() => {});
  };
  t.teardown(teardown);
  try {
    await ip('netns', 'add', name);
    await ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    await ip('link', 'set', nsIf, 'netns', name);
    await ip('addr', 'add', `${hostIp}/24`, 'dev', hostIf);
    await ip('link', 'set', hostIf, 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    // removing the primary address would take the secondaries (the new one) with it otherwise
    await run('ip', ['netns', 'exec', name, 'sh', '-c', `echo 1 > /proc/sys/net/ipv4/conf/${nsIf}/promote_secondaries`]);
    await ip('-n', name, 'addr', 'add', `${nsIp}/24`, 'dev', nsIf);
    await ip('-n', name, 'link', 'set', nsIf, 'up');
    await ip('-n', name, 'route', 'add', 'default', 'via', hostIp);
  } catch (err) {
    await teardown();
    throw err;
  }
  const ns: Netns = {
    name,
    hostIf,
    hostIp,
    nsIf,
    get nsIp() {
      return nsIp;
    },
    subnet,
    async renumber(to?: string) {
      const next = to ?? `${subnet}.${Number(nsIp.split('.')[3]) + 1}`;
      const old = nsIp;
      await ip('-n', name, 'addr', 'add', `${next}/24`, 'dev', nsIf);
      await ip('-n', name, 'addr', 'del', `${old}/24`, 'dev', nsIf);
      nsIp = next;
      // the default route survives the promotion; put it back should a kernel have dropped it
      if (!/default/.test(await ip('-n', name, 'route', 'show', 'default'))) await ip('-n', name, 'route', 'add', 'default', 'via', hostIp);
      return next;
    },
    async exec(cmd: string, ...args: string[]) {
      return (await run('ip', ['netns', 'exec', name, cmd, ...args])).stdout;
    },
  };
  return ns;
}

/**
 * Chromium whose network is the namespace's: launched through a wrapper that runs it under
 * `ip netns exec` (playwright drives it over a pipe, so no port has to cross). The flags are
 * launchBrowser's with `media`: fake camera and microphone, granted without asking. Closed at teardown.
 *
 * A page on plain http from an address other than loopback is not a secure context: it has no
 * `crypto.randomUUID` and no `navigator.mediaDevices`, and the room page cannot start. Production
 * serves it over https; here `secureOrigins` (e.g. `http://10.77.3.1:41234`) are treated as secure.
 */
export async function launchBrowserIn(t: Test, ns: Netns, opts: { secureOrigins?: string[] } = {}): Promise<Browser> {
  const dir = mkdtempSync(join(tmpdir(), 'aula-netns-chromium-'));
  const wrapper = join(dir, 'chromium');
  writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${ns.name} ${CHROMIUM} "$@"\n`);
  chmodSync(wrapper, 0o755);
  const browser = await launchBrowser(t, {
    media: true,
    executablePath: wrapper,
    args: opts.secureOrigins?.length ? [`--unsafely-treat-insecure-origin-as-secure=${opts.secureOrigins.join(',')}`] : [],
  });
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return browser;
}
