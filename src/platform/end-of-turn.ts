/**
 * Work that runs better together: jobs asked for during one turn of the event loop run one after
 * another at its end (setImmediate, after the turn's I/O callbacks), and each caller gets its job's
 * result. For sealing join tokens: after a request's other work, the first AES-GCM seal finds
 * OpenSSL's code and tables out of the CPU's caches and costs about three times a seal that follows
 * another (bench/README.md, "The seal, batched"), and a busy node has many mints in each turn.
 */
interface Job {
  run: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

let queue: Job[] = [];
let scheduled = false;

function flush(): void {
  const jobs = queue;
  queue = [];
  scheduled = false;
  for (const j of jobs) {
    try {
      j.resolve(j.run());
    } catch (err) {
      j.reject(err);
    }
  }
}

export function atEndOfTurn<T>(run: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    queue.push({ run, resolve: resolve as (v: unknown) => void, reject });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  });
}
