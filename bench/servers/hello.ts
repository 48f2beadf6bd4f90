/**
 * The baseline: bare uWebSockets.js with nothing behind it. `GET /*` answers "hello"; `POST /*` reads the
 * whole body (as every Aula POST route does) and echoes it back, so a POST scenario has a baseline that
 * pays for the same body handling. Prints `BENCH_READY {"port":N}` on stdout once listening.
 */
import uws from 'uWebSockets.js';

const app = uws.App();
app.get('/*', (res) => {
  res.end('hello');
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
