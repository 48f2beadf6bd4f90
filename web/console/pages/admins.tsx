import { useEffect, useState } from 'preact/hooks';
import * as api from '../api.ts';
import { when } from '../format.ts';
import { href } from '../router.ts';
import { current, remember, update, type SignedIn } from '../session.ts';
import { Badge, ConfirmButton, CopyButton, Empty, ErrorNote, Loaded, Loading, TableWrap, useAction, useFlash, useLoad } from '../ui/common.tsx';

interface Person {
  id: string;
  email: string;
}
interface Admin {
  id: string;
  email: string;
  role: 'owner' | 'admin';
  status: 'ACTIVE' | 'DISABLED';
  createdAt: string;
  disabledAt: string | null;
  lastSignInAt: string | null;
  invitedBy: Person | null;
}
interface Invitation {
  id: string;
  email: string;
  role: 'owner' | 'admin';
  status: 'PENDING' | 'ACCEPTED' | 'REVOKED' | 'EXPIRED';
  createdAt: string;
  expiresAt: string;
  invitedBy: Person;
  emailed: boolean;
  acceptUrl?: string;
}

const roleName = (r: string) => (r === 'owner' ? 'Owner' : 'Admin');

/**
 * The organization's owners and admins (GET /orgs/:orgId/admins), its pending invitations, and for
 * owners: invite by email, revoke an invitation, disable an admin. An admin sees the lists only; the
 * API decides either way (owner_required).
 */
export function AdminsPanel() {
  const me = current();
  const isOwner = me?.role === 'owner';
  const [admins, reloadAdmins] = useLoad(() => api.list<Admin>(api.org('/admins'), { limit: 100 }), 'admins');
  const [invites, reloadInvites] = useLoad(() => api.list<Invitation>(api.org('/admins/invitations'), { status: 'PENDING', limit: 100 }), 'invitations');
  const [inviting, setInviting] = useState(false);
  const [link, setLink] = useState<{ email: string; url: string } | null>(null);
  const [flash, say] = useFlash();
  const reload = () => {
    reloadAdmins();
    reloadInvites();
  };

  return (
    <section class="panel admins" aria-labelledby="s-admins">
      <div class="panel-head">
        <h2 id="s-admins">Admins</h2>
        {isOwner && (
          <button type="button" class="btn primary small" aria-expanded={inviting} onClick={() => setInviting(!inviting)}>
            Invite an admin
          </button>
        )}
      </div>
      <p class="muted small">
        Owners and admins run the organization in this console. {isOwner ? 'Owners invite them, change their role, and disable or enable them.' : 'Only owners invite them, change their role, and disable or enable them.'}
      </p>
      {flash}
      {link && (
        <div class="banner warn secret" role="status">
          <p>
            <strong>Send this link to {link.email} yourself: it is not shown again.</strong> The server sends no email, so pass it on by a channel you trust. It works once, for 24 hours.
          </p>
          <div class="secret-row">
            <code class="secret-value" aria-label="Invitation link">
              {link.url}
            </code>
            <CopyButton value={link.url} label="Copy link" />
          </div>
        </div>
      )}
      {inviting && (
        <InviteForm
          onInvited={(inv) => {
            setInviting(false);
            if (inv.acceptUrl) setLink({ email: inv.email, url: inv.acceptUrl });
            else {
              setLink(null);
              say(`An invitation is on its way to ${inv.email}.`);
            }
            reloadInvites();
          }}
        />
      )}
      <Loaded load={admins} what="admins" retry={reloadAdmins}>
        {(page) => (
          <TableWrap label="Owners and admins">
            <table class="table">
              <caption class="sr-only">Owners and admins</caption>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Role</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last sign-in</th>
                  <th scope="col">Invited by</th>
                  {isOwner && (
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {page.data.map((a) => (
                  <tr key={a.id}>
                    <td>
                      <span class="strong">{a.email}</span>
                      {a.id === me?.adminId && <span class="muted small"> (you)</span>}
                      <div class="muted small nowrap">since {when(a.createdAt)}</div>
                    </td>
                    <td>{roleName(a.role)}</td>
                    <td>
                      <Badge value={a.status} tone={a.status === 'ACTIVE' ? 'ok' : 'bad'} />
                    </td>
                    <td class="nowrap">{a.lastSignInAt ? when(a.lastSignInAt) : <span class="muted">never</span>}</td>
                    <td class="small">{a.invitedBy ? a.invitedBy.email : <span class="muted">the operator</span>}</td>
                    {isOwner && (
                      <td class="actions-cell">
                        <AdminActions
                          admin={a}
                          self={a.id === me?.adminId}
                          onDone={(text, role) => {
                            say(text);
                            // my own role changed: the console shows what the API now lets me do
                            if (role && a.id === me?.adminId && me) {
                              update(me.orgId, { role });
                              location.reload();
                              return;
                            }
                            reload();
                          }}
                        />
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </Loaded>
      <h3 class="sub-head">Pending invitations</h3>
      <Loaded load={invites} what="invitations" retry={reloadInvites}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty title="No pending invitations.">{isOwner ? 'Invite an admin by email: they choose their password from the link.' : 'Owners invite new admins.'}</Empty>
          ) : (
            <ul class="invitations">
              {page.data.map((i) => (
                <li key={i.id}>
                  <div>
                    <span class="strong">{i.email}</span> <span class="muted small">as {roleName(i.role).toLowerCase()}</span>
                    <div class="muted small">
                      by {i.invitedBy.email}, {i.emailed ? 'emailed' : 'link shown to them'}; expires {when(i.expiresAt)}
                    </div>
                  </div>
                  {isOwner && (
                    <ConfirmButton
                      small
                      danger
                      label="Revoke"
                      ariaLabel={`Revoke the invitation of ${i.email}`}
                      title={`Revoke the invitation of ${i.email}?`}
                      body={<p>The link stops working at once. You can invite them again later.</p>}
                      confirmLabel="Revoke invitation"
                      onConfirm={async () => {
                        await api.del(api.org(`/admins/invitations/${api.enc(i.id)}`));
                        say(`The invitation of ${i.email} is revoked.`);
                        setLink(null);
                        reloadInvites();
                      }}
                    />
                  )}
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <p class="small muted">
        Invitations, role changes and disabled admins are in the <a href={href('/audit-log', { action: 'admin.*' })}>audit log</a>.
      </p>
    </section>
  );
}

/** An owner's actions on one owner or admin: change the role (not the last owner: the API says so), disable, enable. */
function AdminActions({ admin: a, self, onDone }: { admin: Admin; self: boolean; onDone: (text: string, role?: Admin['role']) => void }) {
  const other: Admin['role'] = a.role === 'owner' ? 'admin' : 'owner';
  return (
    <span class="card-actions">
      {a.status === 'ACTIVE' && (
        <ConfirmButton
          small
          label={other === 'owner' ? 'Make owner' : 'Make admin'}
          ariaLabel={`${other === 'owner' ? 'Make owner' : 'Make admin'}: ${self ? 'yourself' : a.email}`}
          title={`Make ${self ? 'yourself' : a.email} ${other === 'owner' ? 'an owner' : 'an admin'}?`}
          body={
            other === 'owner' ? (
              <p>Owners also invite admins, change roles, and disable or enable admins. It counts at once, in every console they have open.</p>
            ) : (
              <p>{self ? 'You' : 'They'} can no longer invite admins, change roles, or disable or enable admins. It counts at once. The organization keeps at least one active owner.</p>
            )
          }
          confirmLabel={other === 'owner' ? 'Make owner' : 'Make admin'}
          onConfirm={async () => {
            await api.patch(api.org(`/admins/${api.enc(a.id)}`), { role: other });
            onDone(`${self ? 'You are' : `${a.email} is`} ${other === 'owner' ? 'an owner' : 'an admin'} now.`, other);
          }}
        />
      )}
      {a.status === 'ACTIVE' && !self && (
        <ConfirmButton
          small
          danger
          label="Disable"
          ariaLabel={`Disable ${a.email}`}
          title={`Disable ${a.email}?`}
          body={<p>They are signed out everywhere at once and can no longer sign in. Their pending invitations are revoked. An owner can enable them again later.</p>}
          confirmLabel="Disable"
          onConfirm={async () => {
            await api.post(api.org(`/admins/${api.enc(a.id)}/disable`));
            onDone(`${a.email} is disabled.`);
          }}
        />
      )}
      {a.status === 'DISABLED' && (
        <ConfirmButton
          small
          label="Enable"
          ariaLabel={`Enable ${a.email}`}
          title={`Enable ${a.email}?`}
          body={<p>They can sign in again with their password, as {a.role === 'owner' ? 'an owner' : 'an admin'}. The invitations revoked when they were disabled stay revoked.</p>}
          confirmLabel="Enable"
          onConfirm={async () => {
            await api.post(api.org(`/admins/${api.enc(a.id)}/enable`));
            onDone(`${a.email} is enabled: they can sign in again.`);
          }}
        />
      )}
    </span>
  );
}

function InviteForm({ onInvited }: { onInvited: (i: Invitation) => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<'admin' | 'owner'>('admin');
  const action = useAction();
  return (
    <form
      class="form invite"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => onInvited(await api.post<Invitation>(api.org('/admins/invitations'), { email: email.trim(), role })));
      }}
    >
      <label>
        <span>Email</span>
        <input name="inviteEmail" type="email" required maxLength={320} value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} placeholder="deputy@school.example" />
      </label>
      <label>
        <span>Role</span>
        <select name="inviteRole" value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as 'admin' | 'owner')} aria-describedby="invite-role-hint">
          <option value="admin">Admin</option>
          <option value="owner">Owner</option>
        </select>
        <span class="hint" id="invite-role-hint">
          Owners also invite and disable admins.
        </span>
      </label>
      {action.error && <ErrorNote error={action.error} />}
      <div class="form-actions">
        <button class="btn primary" type="submit" disabled={action.busy}>
          {action.busy ? 'Inviting…' : 'Send invitation'}
        </button>
      </div>
    </form>
  );
}

interface InvitationFacts {
  email: string;
  role: string;
  orgId: string;
  orgName: string;
  expiresAt: string;
}

/**
 * The accept page, `/console/accept?token=…`: whose invitation, to which organization, and the password
 * to set. The token leaves the address bar at once (it stays in the page until used).
 */
export function AcceptPage({ token: initial, onSignedIn }: { token: string | null; onSignedIn: (s: SignedIn) => void }) {
  const [token] = useState(initial);
  const [facts, setFacts] = useState<{ state: 'loading' } | { state: 'ok'; data: InvitationFacts } | { state: 'error'; error: api.ApiError }>({ state: 'loading' });
  const [password, setPassword] = useState('');
  const action = useAction();

  useEffect(() => {
    document.title = 'Accept your invitation · Aula console';
    if (initial) history.replaceState(null, '', href('/accept'));
    if (!token) {
      setFacts({ state: 'error', error: new api.ApiError(0, 'no_token', 'This page needs the link from your invitation: open it again from the message you received.') });
      return;
    }
    api.peekInvitation(token).then(
      (data) => setFacts({ state: 'ok', data }),
      (error: unknown) => setFacts({ state: 'error', error: error as api.ApiError }),
    );
  }, []);

  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const a = await api.acceptInvitation(token!, password);
      const s: SignedIn = { orgId: a.admin.orgId, orgName: facts.state === 'ok' ? facts.data.orgName : null, email: a.admin.email, role: a.admin.role, adminId: a.admin.id, token: a.sessionToken, expiresAt: a.expiresAt };
      remember(s);
      if (s.orgName) update(s.orgId, { orgName: s.orgName });
      setPassword('');
      onSignedIn(s);
    });
  };

  return (
    <main class="signin" id="main">
      <section class="card signin-card" aria-labelledby="page-title">
        <p class="eyebrow">Aula console</p>
        <h1 id="page-title">Accept your invitation</h1>
        {facts.state === 'loading' && <Loading what="your invitation" />}
        {facts.state === 'error' && (
          <>
            <ErrorNote error={facts.error} />
            <p>
              <a href={href('/sign-in')}>Go to sign in</a>
            </p>
          </>
        )}
        {facts.state === 'ok' && (
          <>
            <p>
              You are invited to be {facts.data.role === 'owner' ? 'an owner' : 'an admin'} of <strong>{facts.data.orgName}</strong>. Choose a password to finish; you are signed in right after.
            </p>
            <form onSubmit={submit} class="form">
              <label>
                <span>Email</span>
                <input name="email" type="email" value={facts.data.email} readOnly autocomplete="username" />
              </label>
              <label>
                <span>Organization id</span>
                <input name="orgId" value={facts.data.orgId} readOnly aria-describedby="org-hint" />
                <span class="hint" id="org-hint">
                  You sign in with it, your email and your password.
                </span>
              </label>
              <label>
                <span>New password</span>
                <input id="password" name="password" type="password" value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} required minLength={12} autocomplete="new-password" aria-describedby="password-hint" />
                <span class="hint" id="password-hint">
                  At least 12 characters and hard to guess: a few uncommon words, or a password manager's.
                </span>
              </label>
              {action.error && <ErrorNote error={action.error} />}
              <button class="btn primary big" type="submit" disabled={action.busy}>
                {action.busy ? 'Setting your password…' : 'Set password and sign in'}
              </button>
              <p class="muted small">The link works once, until {when(facts.data.expiresAt)}.</p>
            </form>
          </>
        )}
      </section>
    </main>
  );
}
