import { iso, type Clock } from '../clock.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { PlanName } from '../plans.ts';

export interface Org {
  id: string;
  name: string;
  plan: PlanName;
  createdAt: Date;
}

export async function createOrg(db: Db, clock: Clock, input: { name: string; plan: PlanName }): Promise<Org> {
  const now = iso(clock.now());
  const [org] = await db<Org[]>`insert into organizations (id, name, plan, created_at, updated_at)
    values (${newId('org')}, ${input.name}, ${input.plan}, ${now}, ${now}) returning id, name, plan, created_at`;
  return org!;
}

export async function getOrg(db: Db, id: string): Promise<Org> {
  const [org] = await db<Org[]>`select id, name, plan, created_at from organizations where id = ${id}`;
  if (!org) throw new AppError('not_found', { message: `No organization ${id}.` });
  return org;
}
