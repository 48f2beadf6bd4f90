import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { post, whenSignedOut } from './api.ts';
import { current, forgetToken, remembered, switchTo, type SignedIn } from './session.ts';
import { href, interceptLinks, match, navigate, useLocation } from './router.ts';
import { Layout } from './ui/layout.tsx';
import { SignIn } from './ui/sign-in.tsx';
import { Overview } from './pages/overview.tsx';
import { Webhooks, NewWebhook } from './pages/webhooks.tsx';
import { WebhookPage } from './pages/webhook.tsx';
import { DeliveryPage } from './pages/delivery.tsx';
import { Settings } from './pages/settings.tsx';
import { Meetings } from './pages/meetings.tsx';
import { MeetingPage } from './pages/meeting.tsx';
import { Classes } from './pages/classes.tsx';
import { ClassPage } from './pages/class.tsx';
import { Users } from './pages/users.tsx';
import { Recordings } from './pages/recordings.tsx';
import { ApiKeys } from './pages/api-keys.tsx';
import { AuditLog } from './pages/audit-log.tsx';
import { AcceptPage } from './pages/admins.tsx';
import { Empty, PageHead } from './ui/common.tsx';
import './console.css';

/**
 * The admin console (docs/console.md): served at /console and every path under it, it signs an
 * organization's owner or admin in and calls the admin API as any client would; the server decides
 * what the admin may see and do.
 */

function Page({ path, query }: { path: string; query: URLSearchParams }) {
  if (path === '/') return <Overview />;
  if (path === '/webhooks') return <Webhooks />;
  if (path === '/webhooks/new') return <NewWebhook />;
  let m = match('/webhooks/deliveries/:deliveryId', path);
  if (m) return <DeliveryPage deliveryId={m.deliveryId!} />;
  m = match('/webhooks/:id', path);
  if (m) return <WebhookPage id={m.id!} query={query} />;
  if (path === '/settings') return <Settings />;
  if (path === '/meetings') return <Meetings query={query} />;
  m = match('/meetings/:id', path);
  if (m) return <MeetingPage id={m.id!} />;
  if (path === '/classes') return <Classes query={query} />;
  m = match('/classes/:id', path);
  if (m) return <ClassPage id={m.id!} query={query} />;
  if (path === '/users') return <Users query={query} />;
  if (path === '/recordings') return <Recordings query={query} />;
  if (path === '/api-keys') return <ApiKeys />;
  if (path === '/audit-log') return <AuditLog query={query} />;
  return (
    <>
      <PageHead title="Page not found" />
      <Empty title="There is no console page at this address.">
        <a href={href('/')}>Go to the overview</a>
      </Empty>
    </>
  );
}

function App() {
  const [session, setSession] = useState<SignedIn | null>(() => current());
  const [notice, setNotice] = useState<string | null>(null);
  const [prefill, setPrefill] = useState<string | null>(() => remembered()[0]?.orgId ?? null);
  const { path, query } = useLocation();

  useEffect(() => {
    whenSignedOut((reason) => {
      setNotice(`${reason}`);
      setSession(null);
    });
  }, []);

  // the sign-in page has an address of its own; a signed-in visit to it goes to where it was going
  useEffect(() => {
    if (path === '/accept') return;
    if (!session && path !== '/sign-in') navigate(href('/sign-in', { next: path === '/' ? null : href(path, query) }), { replace: true });
    if (session && path === '/sign-in') navigate(query.get('next')?.startsWith('/console') ? query.get('next')! : href('/'), { replace: true });
  }, [session, path]);

  // an invitation's link: the accept page sets the password and signs in, whoever is signed in here
  if (path === '/accept') {
    return (
      <AcceptPage
        token={query.get('token')}
        onSignedIn={(s) => {
          setNotice(null);
          setSession(s);
          navigate(href('/'), { replace: true });
        }}
      />
    );
  }

  if (!session || path === '/sign-in') {
    // "Sign in to another organization": the one signed in still works, and the page offers the way back
    const still = current();
    return (
      <SignIn
        notice={notice}
        prefill={prefill}
        {...(still ? { back: { label: `Back to ${still.orgName ?? still.orgId}`, go: () => setSession(still) } } : {})}
        onSignedIn={(s) => {
          setNotice(null);
          setSession(s);
        }}
      />
    );
  }

  const signOut = async () => {
    try {
      await post('/auth/sign-out');
    } catch {
      // already over on the server: forget it here all the same
    }
    forgetToken(session.orgId);
    setPrefill(session.orgId);
    setNotice('Signed out.');
    setSession(null);
  };
  const switchOrg = (orgId: string) => {
    switchTo(orgId);
    const s = current();
    setPrefill(orgId);
    setNotice(s ? null : 'Sign in again to this organization.');
    setSession(s);
    navigate(href('/'));
  };
  const addOrg = () => {
    setPrefill(null);
    setNotice(null);
    setSession(null);
  };

  return (
    <Layout session={session} onSwitch={switchOrg} onSignOut={signOut} onAddOrg={addOrg}>
      <Page key={session.orgId} path={path} query={query} />
    </Layout>
  );
}

interceptLinks();
// the shell's "Loading…" goes: Preact would keep what it did not render itself beside the application
const root = document.getElementById('app')!;
root.replaceChildren();
render(<App />, root);
