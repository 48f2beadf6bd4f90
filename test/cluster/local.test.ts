import postgres from 'postgres';
import { pgOptions } from '../../src/platform/db/index.ts';
import t from 'tap';
import { LocalCluster } from '../../src/platform/cluster/local-cluster.ts';
import { SHARD_COUNT } from '../../src/platform/cluster/cluster.ts';
import { readPlacement } from '../../src/platform/cluster/placement.ts';
import type { Sql } from '../../src/platform/db/index.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { createTestDatabase } from '../helpers/node.ts';
import { clusterContract } from './contract.ts';

const sql = postgres(await createTestDatabase(t), { max: 4, ...pgOptions }) as unknown as Sql;
t.teardown(() => sql.end());
await migrate(sql);

t.test('LocalCluster owns every shard by itself', async (t) => {
  const c = new LocalCluster({ sql });
  await c.start(async () => null);
  t.equal(c.owned().size, SHARD_COUNT);
  await c.stop();
  t.equal(c.owned().size, 0);
});

t.test('LocalCluster', async (t) => {
  clusterContract(t, {
    sql,
    async create(t) {
      const c = new LocalCluster({ sql });
      t.teardown(() => c.stop());
      return c;
    },
    readPlacement: () => readPlacement(null, sql, ''),
  });
});
