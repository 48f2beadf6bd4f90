import t from 'tap';
import { ConfigError, loadConfig } from '../../src/platform/config.ts';
import { openStorage } from '../../src/platform/storage/index.ts';

const s3 = {
  AULA_STORAGE: 's3',
  AULA_S3_BUCKET: 'aula-recordings',
  AULA_S3_REGION: 'eu-central-1',
  AULA_S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
  AULA_S3_SECRET_ACCESS_KEY: 'secret-example',
};

t.test('loadConfig(): AULA_STORAGE=s3 needs the bucket, the region and both keys', async (t) => {
  const config = loadConfig(s3);
  t.equal(config.AULA_STORAGE, 's3');
  t.equal(config.AULA_S3_ENDPOINT, undefined, 'no endpoint: AWS');
  t.equal((await openStorage(config)).kind, 's3');
  for (const name of ['AULA_S3_BUCKET', 'AULA_S3_REGION', 'AULA_S3_ACCESS_KEY_ID', 'AULA_S3_SECRET_ACCESS_KEY'] as const) {
    t.throws(() => loadConfig({ ...s3, [name]: undefined }), new ConfigError(`invalid configuration:\n  ${name}: required when AULA_STORAGE=s3`), `without ${name}`);
  }
  t.throws(
    () => loadConfig({ AULA_STORAGE: 's3' }),
    { message: /AULA_S3_BUCKET: required.*\n.*AULA_S3_REGION: required.*\n.*AULA_S3_ACCESS_KEY_ID: required.*\n.*AULA_S3_SECRET_ACCESS_KEY: required/ },
    'every missing one is named',
  );
  t.equal(loadConfig({}).AULA_STORAGE, 'disk', 'on disk (the default) no S3 setting is needed');
});

t.test('loadConfig() refuses malformed storage settings', async (t) => {
  const bad: Record<string, string> = {
    AULA_STORAGE: 'ftp',
    AULA_S3_ENDPOINT: 'minio:9000',
    AULA_S3_BUCKET: 'Aula_Recordings',
    AULA_S3_REGION: 'eu west',
  };
  for (const [name, value] of Object.entries(bad)) {
    t.throws(() => loadConfig({ ...s3, [name]: value }), { name: 'ConfigError', message: new RegExp(`${name}:`) }, `${name}=${value}`);
  }
  t.throws(() => loadConfig({ ...s3, AULA_S3_ENDPOINT: 'ftp://minio:9000' }), { message: /AULA_S3_ENDPOINT: must be an http/ });
  t.equal(loadConfig({ ...s3, AULA_S3_ENDPOINT: 'http://127.0.0.1:9000' }).AULA_S3_ENDPOINT, 'http://127.0.0.1:9000');
});
