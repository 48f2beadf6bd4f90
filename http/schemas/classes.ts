import { z } from 'zod';
import type { ClassInput, ClassListQuery, ClassRecord } from '../../src/services/classes.ts';
import { externalId, pageQuery, schemaOf } from './common.ts';

export const classInput = schemaOf<ClassInput>()(
  z.strictObject({
    externalId: externalId.describe('Your own id for the class; sending it again updates the class.'),
    name: z.string().trim().min(1).max(300),
    section: z.string().max(100).nullable().optional(),
    academicYear: z.string().max(50).nullable().optional(),
    description: z.string().max(5000).nullable().optional(),
    courseId: z.string().max(255).nullable().optional().describe('Your own course id, echoed in events.'),
  }),
);

export const classRecord = schemaOf<ClassRecord>()(
  z.object({
    id: z.string(),
    externalId: z.string().nullable(),
    name: z.string(),
    section: z.string().nullable(),
    academicYear: z.string().nullable(),
    description: z.string().nullable(),
    courseId: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  }),
);

export const classListQuery = schemaOf<ClassListQuery>()(z.strictObject({ ...pageQuery, externalId: externalId.optional() }));
