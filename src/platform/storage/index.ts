import { join } from 'node:path';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { DiskStorage } from './disk.ts';
import { S3Storage } from './s3.ts';
import type { Storage } from './storage.ts';

export type { Storage } from './storage.ts';
export { attachmentDisposition, StorageKeyError, StorageNotFoundError } from './keys.ts';
export { DiskStorage } from './disk.ts';
export { S3Storage, s3Client, type S3Settings } from './s3.ts';

type StorageConfig = Pick<
  Config,
  | 'AULA_DATA_DIR'
  | 'AULA_STORAGE'
  | 'AULA_STORAGE_DIR'
  | 'AULA_S3_ENDPOINT'
  | 'AULA_S3_BUCKET'
  | 'AULA_S3_REGION'
  | 'AULA_S3_ACCESS_KEY_ID'
  | 'AULA_S3_SECRET_ACCESS_KEY'
>;

/** The disk backend's folder: AULA_STORAGE_DIR, else `storage` in the data folder, beside the embedded database. */
export function storageDir(config: Pick<Config, 'AULA_DATA_DIR' | 'AULA_STORAGE_DIR'>): string {
  return config.AULA_STORAGE_DIR ?? join(config.AULA_DATA_DIR, 'storage');
}

/** The storage the configuration names; loadConfig has already made sure s3's settings are all there. */
export async function openStorage(config: StorageConfig, log?: Logger): Promise<Storage> {
  if (config.AULA_STORAGE === 'disk') return DiskStorage.open(storageDir(config), log);
  const { AULA_S3_BUCKET: bucket, AULA_S3_REGION: region, AULA_S3_ACCESS_KEY_ID: accessKeyId, AULA_S3_SECRET_ACCESS_KEY: secretAccessKey } = config;
  if (!bucket || !region || !accessKeyId || !secretAccessKey) {
    throw new Error('AULA_STORAGE=s3 needs AULA_S3_BUCKET, AULA_S3_REGION, AULA_S3_ACCESS_KEY_ID and AULA_S3_SECRET_ACCESS_KEY');
  }
  return S3Storage.fromSettings({ endpoint: config.AULA_S3_ENDPOINT, bucket, region, accessKeyId, secretAccessKey });
}
