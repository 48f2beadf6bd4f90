import { useState } from 'preact/hooks';
import { signIn, get, type ApiError } from '../api.ts';
import { remember, remembered, forget, update, type SignedIn } from '../session.ts';
import { ErrorNote, useAction } from './common.tsx';

/**
 * Sign in: the organization's id (or its short name), email and password, against POST /auth/sign-in. The organizations
 * signed in on this browser before are offered first, so choosing one fills its id and email.
 */
export function SignIn({ onSignedIn, notice, prefill, back }: { onSignedIn: (s: SignedIn) => void; notice: string | null; prefill: string | null; back?: { label: string; go: () => void } }) {
  const known = remembered();
  const pre = known.find((o) => o.orgId === prefill) ?? null;
  const [orgId, setOrgId] = useState(pre?.orgId ?? '');
  const [email, setEmail] = useState(pre?.email ?? '');
  const [password, setPassword] = useState('');
  const action = useAction();

  const submit = async (e: Event) => {
    e.preventDefault();
    await action.run(async () => {
      const a = await signIn(orgId.trim(), email.trim(), password);
      const s: SignedIn = { orgId: a.admin.orgId, orgName: known.find((o) => o.orgId === a.admin.orgId)?.orgName ?? null, email: a.admin.email, role: a.admin.role, adminId: a.admin.id, token: a.sessionToken, expiresAt: a.expiresAt };
      remember(s);
      try {
        const o = await get<{ name: string }>(`/orgs/${encodeURIComponent(s.orgId)}`);
        s.orgName = o.name;
        update(s.orgId, { orgName: o.name });
      } catch {
        // the name is a nicety: the console works with the id
      }
      setPassword('');
      onSignedIn(s);
    });
  };

  return (
    <main class="signin" id="main">
      <section class="card signin-card" aria-labelledby="page-title">
        <p class="eyebrow">Aula console</p>
        <h1 id="page-title">Sign in</h1>
        <p class="muted">For an organization's owners and admins.</p>
        {notice && (
          <p class="note" role="status">
            {notice}
          </p>
        )}
        {known.length > 0 && (
          <div class="known">
            <p class="small menu-label" id="known-label">
              Signed in on this browser before
            </p>
            <ul aria-labelledby="known-label">
              {known.map((o) => (
                <li key={o.orgId}>
                  <button
                    type="button"
                    class={`known-org${o.orgId === orgId ? ' chosen' : ''}`}
                    aria-pressed={o.orgId === orgId}
                    onClick={() => {
                      setOrgId(o.orgId);
                      setEmail(o.email);
                      document.getElementById('password')?.focus();
                    }}
                  >
                    <strong>{o.orgName ?? o.orgId}</strong>
                    <span class="muted small">{o.email}</span>
                  </button>
                  <button type="button" class="link small" aria-label={`Forget ${o.orgName ?? o.orgId} on this browser`} onClick={() => (forget(o.orgId), setOrgId(''), setEmail(''))}>
                    Forget
                  </button>
                </li>
              ))}
            </ul>
          </div>
        )}
        <form onSubmit={submit} class="form" noValidate={false}>
          <label>
            <span>Organization id or short name</span>
            <input name="orgId" value={orgId} onInput={(e) => setOrgId((e.target as HTMLInputElement).value)} required autocomplete="organization" spellcheck={false} placeholder="org_… or riverside" />
          </label>
          <label>
            <span>Email</span>
            <input name="email" type="email" value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} required autocomplete="username" />
          </label>
          <label>
            <span>Password</span>
            <input id="password" name="password" type="password" value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} required autocomplete="current-password" />
          </label>
          {action.error && <ErrorNote error={action.error as ApiError} />}
          <button class="btn primary big" type="submit" disabled={action.busy}>
            {action.busy ? 'Signing in…' : 'Sign in'}
          </button>
          {back && (
            <button type="button" class="btn" onClick={back.go}>
              {back.label}
            </button>
          )}
        </form>
      </section>
    </main>
  );
}
