import type { JoinLinkRecord } from '../src/services/join-links.ts';

/** Characters a JSON string must escape (JSON.stringify also escapes lone surrogates). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const jsonString = (s: string): string => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

/**
 * `JSON.stringify({ data: link })`, built by hand: a mint's response is mostly its token three times,
 * and JSON.stringify's generic walk cost more than the rest of the envelope (test/http/join.test.ts
 * compares the two). Kept because the mint bench says it pays: bench/README.md, "Back to a standard
 * AEAD (2026-11-24)": with JSON.stringify a mint took about 2 µs more (22.1 µs, 0.273 of hello GET by
 * rate against the guard's 0.25), most of the guard's margin.
 */
export function joinLinkJson(l: JoinLinkRecord): string {
  const token = NEEDS_ESCAPE.test(l.token) ? null : `"${l.token}"`;
  return `{"data":{"url":${urlJson(l.url, l.token, token !== null)},"embedUrl":${urlJson(l.embedUrl, l.token, token !== null)},"token":${token ?? JSON.stringify(l.token)},"expiresAt":${jsonString(l.expiresAt)},"role":"${l.role}","singleUse":${l.singleUse},"userId":${jsonString(l.userId)}}}`;
}

/** A link's URL ends with its token: when the token needs no escape, only the part before it is looked at. */
function urlJson(url: string, token: string, tokenSafe: boolean): string {
  if (!tokenSafe || !url.endsWith(token)) return jsonString(url);
  return NEEDS_ESCAPE.test(url.slice(0, url.length - token.length)) ? JSON.stringify(url) : `"${url}"`;
}
