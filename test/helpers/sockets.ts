// Which TCP sockets a process holds, from /proc (Linux): to see that several processes listen on one
// port, and to tell which Postgres backends serve which node process.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface TcpSocket {
  localPort: number;
  remotePort: number;
  /** 'LISTEN', 'ESTABLISHED', ... (the common ones; others as their hex code). */
  state: string;
  inode: number;
}

const STATES: Record<string, string> = { '01': 'ESTABLISHED', '06': 'TIME_WAIT', '08': 'CLOSE_WAIT', '0A': 'LISTEN' };

function socketInodes(pid: number): Set<number> {
  const out = new Set<number>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out; // gone
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(Number(m[1]));
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

function tcpTable(): TcpSocket[] {
  const rows: TcpSocket[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      rows.push({
        localPort: parseInt(f[1]!.split(':')[1]!, 16),
        remotePort: parseInt(f[2]!.split(':')[1]!, 16),
        state: STATES[f[3]!] ?? f[3]!,
        inode: Number(f[9]),
      });
    }
  }
  return rows;
}

/** The TCP sockets process `pid` has open. */
export function tcpSocketsOf(pid: number): TcpSocket[] {
  const inodes = socketInodes(pid);
  return tcpTable().filter((s) => s.inode !== 0 && inodes.has(s.inode));
}
