import { z } from 'zod';
import { route } from '../route.ts';

/**
 * The join page: it exchanges the token with JavaScript after loading, so link previews that only fetch
 * HTML never spend a single-use link. The deviceId lives in sessionStorage: one per tab, kept across
 * reloads, which is what lets a reload resume the session.
 */
const page = (embed: boolean) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>Joining…</title>
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0;display:grid;place-items:center;min-height:100vh;background:#f6f7f9;color:#1d2433}
main{max-width:28rem;padding:2rem;text-align:center}h1{font-size:1.25rem}.muted{color:#5b6475}</style></head>
<body><main><h1 id="title">Joining…</h1><p id="status" class="muted">Checking your link.</p></main>
<script>
(() => {
  const embed = ${embed};
  const KEY = 'aula:session:' + location.pathname;
  const params = new URLSearchParams(location.hash.slice(1) || location.search);
  const token = params.get('jt');
  const title = document.getElementById('title'), status = document.getElementById('status');
  const say = (h, p) => { title.textContent = h; status.textContent = p; };
  const post = (msg) => { if (embed && parent !== window) parent.postMessage({ source: 'svc-embed', ...msg }, '*'); };
  let deviceId = sessionStorage.getItem('aula:device');
  if (!deviceId) { deviceId = crypto.randomUUID(); sessionStorage.setItem('aula:device', deviceId); }
  const messages = {
    join_token_expired: 'This link has expired. Ask for a new one.',
    join_token_used: 'This link was already used on another device.',
    join_token_revoked: 'This link is no longer valid.',
    join_token_invalid: 'This link is not valid.',
    user_deactivated: 'Your account is deactivated.',
    not_a_member: 'You are not a member of this organization.',
    not_enrolled: 'This class is for enrolled students only.',
    not_invited: 'This meeting is for invited people only.',
    meeting_ended: 'This meeting has ended.',
    rate_limited: 'Too many attempts. Try again in a minute.',
  };
  async function start() {
    if (!token) { say('No join link', 'Open the link you were given.'); return; }
    const res = await fetch('/api/v1/join-tokens/exchange', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, deviceId }) });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) { const code = body.error && body.error.code; say('Cannot join', messages[code] || 'Something went wrong.'); post({ type: 'error', code }); return; }
    const s = body.data;
    sessionStorage.setItem(KEY, JSON.stringify(s));
    document.title = s.meeting.title;
    if (s.waitingRoom && !s.mediaToken) say(s.meeting.title, 'Waiting for a host to let you in…');
    else say(s.meeting.title, 'Connecting as ' + s.user.displayName + '…');
    post({ type: 'session', role: s.role, meeting: { id: s.meeting.id, title: s.meeting.title } });
  }
  start().catch(() => say('Cannot join', 'The service could not be reached.'));
})();
</script></body></html>`;

const JOIN = page(false);
const EMBED = page(true);
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'";

export const pageRoutes = [
  route(
    { method: 'get', path: '/join/:slug', root: true, tag: 'Pages', auth: 'none', summary: 'Full-page join (token in the #jt fragment).', raw: true, params: z.object({ slug: z.string().max(64) }) },
    () => ({
      data: null,
      raw: { contentType: 'text/html; charset=utf-8', body: JOIN },
      headers: { 'Content-Security-Policy': `${CSP}; frame-ancestors 'none'`, 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' },
    }),
  ),
  route(
    { method: 'get', path: '/embed/:slug', root: true, tag: 'Pages', auth: 'none', summary: 'Iframe join (token in the jt query parameter).', raw: true, params: z.object({ slug: z.string().max(64) }) },
    () => ({
      data: null,
      raw: { contentType: 'text/html; charset=utf-8', body: EMBED },
      headers: { 'Content-Security-Policy': CSP, 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' },
    }),
  ),
];
