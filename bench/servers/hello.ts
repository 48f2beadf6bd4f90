/**
 * The baseline: bare uWebSockets.js with nothing behind it. `GET /*` answers "hello"; `POST /*` reads the
 * whole body (as every Aula POST route does) and echoes it back, so a POST scenario has a baseline that
 * pays for the same body handling; `POST /shaped/*` answers like a mint without doing one. Prints `BENCH_READY {"port":N}` on stdout once listening.
 */
import uws from 'uWebSockets.js';

const app = uws.App();
app.get('/*', (res) => {
  res.end('hello');
});
// The shape of a mint's answer with none of its work: the body parsed as JSON, then 201, the five
// headers Aula writes (rate limit, request id, content type) and a constant body the size of a
// mint's response (a 131-character token three times).
const TOKEN = `jt_${'A'.repeat(128)}`;
const SHAPED = JSON.stringify({
  data: {
    url: `http://127.0.0.1:8080/join/abc-defg-hjk#jt=${TOKEN}`,
    embedUrl: `http://127.0.0.1:8080/embed/abc-defg-hjk?jt=${TOKEN}`,
    token: TOKEN,
    expiresAt: '2026-11-22T06:00:00.000Z',
    role: 'PARTICIPANT',
    singleUse: true,
    userId: 'usr_01kaaaaaaaaaaaaaaaaaaaaaaa',
  },
});
app.post('/shaped/*', (res) => {
  res.onAborted(() => {});
  res.onData((ab, isLast) => {
    if (!isLast) return; // wrk's body comes in one chunk
    JSON.parse(Buffer.from(ab).toString('utf8'));
    res.cork(() =>
      res
        .writeStatus('201 Created')
        .writeHeader('X-RateLimit-Limit', '10000')
        .writeHeader('X-RateLimit-Remaining', '9999')
        .writeHeader('X-RateLimit-Reset', '1795326593')
        .writeHeader('X-Request-Id', 'req_0123456789abcdef0000000000000001')
        .writeHeader('Content-Type', 'application/json')
        .end(SHAPED),
    );
  });
});
app.post('/*', (res) => {
  const chunks: Buffer[] = [];
  res.onAborted(() => {});
  res.onData((ab, isLast) => {
    chunks.push(Buffer.from(ab.slice(0)));
    if (isLast) res.cork(() => res.writeHeader('Content-Type', 'application/json').end(Buffer.concat(chunks)));
  });
});
// The runner holds our stdin; when it goes away, so do we.
process.stdin.on('end', () => process.exit(0)).resume();
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) {
    process.stderr.write('hello: could not listen\n');
    process.exit(1);
  }
  process.stdout.write('BENCH_READY ' + JSON.stringify({ port: uws.us_socket_local_port(socket) }) + '\n');
});
