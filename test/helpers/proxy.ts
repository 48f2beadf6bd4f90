import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Test } from 'tap';

/**
 * An HTTP proxy a test page goes through (Chromium's `--proxy-server`, or a context's proxy), so the test
 * can cut the page's signaling as a Wi-Fi blip would: `cut(ms)` drops every tunnel and connection it
 * carries (the room socket among them) and refuses new ones for that long. WebRTC's UDP does not go
 * through it, so media keeps flowing while the signaling is cut, as on a network whose TCP stalled.
 */
export interface CuttableProxy {
  url: string;
  cut(ms: number): void;
  /** Tunnels and requests refused while cut. */
  refused: number;
}

export async function startProxy(t: Test): Promise<CuttableProxy> {
  const open = new Set<Socket>();
  let cutUntil = 0;
  const isCut = () => Date.now() < cutUntil;
  const state = { refused: 0 };
  const track = (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (isCut()) {
      state.refused++;
      req.socket.destroy();
      return;
    }
    const target = new URL(req.url!);
    const up = request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('socket', track);
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('connection', track);
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    if (isCut()) {
      state.refused++;
      client.destroy();
      return;
    }
    const [host, port] = req.url!.split(':');
    const up = connect(Number(port), host!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    track(up);
    up.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of open) s.destroy();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    cut(ms: number) {
      cutUntil = Date.now() + ms;
      for (const s of open) s.destroy();
    },
    get refused() {
      return state.refused;
    },
  };
}
