import type { Test } from 'tap';
import type { ApiResponse } from './node.ts';

/** Asserts the spec's error envelope with the given status and code; returns the error's details. */
export function assertError(t: Test, res: ApiResponse, status: number, code: string): Record<string, any> {
  t.equal(res.status, status, `status ${status} for ${code}`, { body: res.body });
  t.equal(res.body?.error?.code, code, `code ${code}`);
  t.type(res.body?.error?.message, 'string', 'message is a string');
  t.type(res.body?.error?.details, 'object', 'details is an object');
  t.match(res.body?.requestId, /^\S+$/, 'requestId present');
  return res.body?.error?.details ?? {};
}
