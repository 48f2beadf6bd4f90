import { join } from 'node:path';
import S3rver from 's3rver';
import t from 'tap';
import { S3Storage, s3Client, type S3Settings } from '../../src/platform/storage/index.ts';
import { scratch, storageContract } from './contract.ts';

/**
 * An S3-compatible server for the suite: AULA_TEST_S3_ENDPOINT (with AULA_TEST_S3_BUCKET, _REGION,
 * _ACCESS_KEY_ID, _SECRET_ACCESS_KEY) names one that runs already, e.g. MinIO; otherwise s3rver, an
 * S3 server in Node, is started here on a free port with its files in a temporary folder.
 */
async function s3Server(): Promise<S3Settings> {
  const env = process.env;
  if (env.AULA_TEST_S3_ENDPOINT) {
    return {
      endpoint: env.AULA_TEST_S3_ENDPOINT,
      bucket: env.AULA_TEST_S3_BUCKET ?? 'aula-test',
      region: env.AULA_TEST_S3_REGION ?? 'us-east-1',
      accessKeyId: env.AULA_TEST_S3_ACCESS_KEY_ID ?? '',
      secretAccessKey: env.AULA_TEST_S3_SECRET_ACCESS_KEY ?? '',
    };
  }
  const bucket = 'aula-test';
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: join(await scratch(t), 's3'),
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port } = await server.run();
  t.teardown(() => server.close());
  // s3rver's one account.
  return { endpoint: `http://127.0.0.1:${port}`, bucket, region: 'us-east-1', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
}

const external = Boolean(process.env.AULA_TEST_S3_ENDPOINT);
const settings = await s3Server();
const client = s3Client(settings);
/** The commands the storage sends, in order, to see how a put went up. */
const sent: string[] = [];
client.middlewareStack.add(
  (next, context) => async (args) => {
    sent.push(context.commandName ?? '?');
    return next(args);
  },
  { step: 'initialize', name: 'recordCommands' },
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('S3Storage', async (t) => {
  storageContract(t, {
    storage: new S3Storage(client, settings.bucket),
    async bigPut(t, put) {
      sent.length = 0;
      await put();
      t.equal(sent[0], 'CreateMultipartUploadCommand', 'a multipart upload');
      t.equal(sent.filter((c) => c === 'UploadPartCommand').length, 3, 'in three parts of at most 8 MiB');
      t.equal(sent.at(-1), 'CompleteMultipartUploadCommand');
      t.notOk(sent.includes('PutObjectCommand'), 'not one PutObject');
    },
    async checkPresign(t, storage, key, body) {
      const signedAt = Date.now();
      const url = await storage.presign(key, 2, { contentType: 'video/mp4', filename: 'Physik – Stunde 1 "live".mp4' });
      if (!url) {
        t.fail('a URL');
        return;
      }
      t.match(url, /X-Amz-Expires=2(&|$)/, 'signed for two seconds');
      t.match(url, /X-Amz-Signature=[0-9a-f]{64}(&|$)/, 'with a SigV4 signature');
      if (settings.endpoint) t.ok(url.startsWith(`${settings.endpoint}/${settings.bucket}/${key}?`), 'path-style, on the endpoint');
      const ok = await fetch(url);
      t.equal(ok.status, 200, 'a plain GET of it works');
      t.equal(ok.headers.get('content-type'), 'video/mp4');
      t.equal(
        ok.headers.get('content-disposition'),
        `attachment; filename="Physik _ Stunde 1 _live_.mp4"; filename*=UTF-8''Physik%20%E2%80%93%20Stunde%201%20%22live%22.mp4`,
        'a download with the file name',
      );
      t.ok(Buffer.from(await ok.arrayBuffer()).equals(body), 'the bytes');
      if (external) {
        const altered = url.replace(/(X-Amz-Signature=[0-9a-f]{63})([0-9a-f])/, (_, head: string, c: string) => head + (c === '0' ? '1' : '0'));
        t.not(altered, url);
        const tampered = await fetch(altered);
        t.equal(tampered.status, 403, 'an altered signature is refused');
        await tampered.arrayBuffer();
      } else {
        t.comment('s3rver checks a presigned URL\'s expiry but not its SigV4 signature: tampering is tested against AULA_TEST_S3_ENDPOINT only');
      }
      const ranged = await fetch(url, { headers: { range: 'bytes=10-19' } });
      t.equal(ranged.status, 206, 'a Range GET of it');
      t.ok(Buffer.from(await ranged.arrayBuffer()).equals(body.subarray(10, 20)));
      // The signature's time is in whole seconds: the URL is surely dead a second after its expiry.
      await sleep(Math.max(0, signedAt + 3100 - Date.now()));
      const late = await fetch(url);
      t.equal(late.status, 403, 'refused once it expired');
      await late.arrayBuffer();
      await t.rejects(storage.presign(key, 0, { contentType: 'video/mp4' }), RangeError, 'at least a second');
      await t.rejects(storage.presign(key, 604_801, { contentType: 'video/mp4' }), RangeError, 'at most a week');
    },
  });
});
