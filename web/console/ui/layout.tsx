import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { SignedIn } from '../session.ts';
import { remembered } from '../session.ts';
import { href, useLocation } from '../router.ts';

export const NAV: { path: string; label: string }[] = [
  { path: '/', label: 'Overview' },
  { path: '/meetings', label: 'Meetings' },
  { path: '/classes', label: 'Classes' },
  { path: '/recordings', label: 'Recordings' },
  { path: '/users', label: 'Users' },
  { path: '/webhooks', label: 'Webhooks' },
  { path: '/api-keys', label: 'API keys' },
  { path: '/settings', label: 'Settings' },
  { path: '/audit-log', label: 'Audit log' },
];

const isCurrent = (item: string, path: string) => (item === '/' ? path === '/' : path === item || path.startsWith(`${item}/`));

/**
 * The frame of every signed-in page: the organization (and the others signed in on this browser), the
 * navigation (a menu button below 800 px), and the page. Skip link first, the page's heading takes the
 * focus when the page changes so a screen reader says where it is.
 */
export function Layout(props: { session: SignedIn; onSwitch: (orgId: string) => void; onSignOut: () => void; onAddOrg: () => void; children: ComponentChildren }) {
  const { path } = useLocation();
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [path]);
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to the page
      </a>
      <header class="topbar">
        <button type="button" class="btn menu-button" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
          <span aria-hidden="true">☰</span> Menu
        </button>
        <a class="brand" href={href('/')}>
          Aula <span class="muted">console</span>
        </a>
        <OrgSwitcher {...props} />
      </header>
      <nav id="nav" class={`nav${menu ? ' open' : ''}`} aria-label="Console">
        <ul>
          {NAV.map((n) => (
            <li key={n.path}>
              <a href={href(n.path)} aria-current={isCurrent(n.path, path) ? 'page' : undefined}>
                {n.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" class="main" tabIndex={-1}>
        {props.children}
      </main>
    </div>
  );
}

function OrgSwitcher({ session, onSwitch, onSignOut, onAddOrg }: { session: SignedIn; onSwitch: (orgId: string) => void; onSignOut: () => void; onAddOrg: () => void }) {
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const away = (e: Event) => !box.current?.contains(e.target as Node) && setOpen(false);
    const esc = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        setOpen(false);
        box.current?.querySelector<HTMLButtonElement>('button')?.focus();
      }
    };
    document.addEventListener('click', away);
    document.addEventListener('keydown', esc);
    return () => {
      document.removeEventListener('click', away);
      document.removeEventListener('keydown', esc);
    };
  }, [open]);
  const others = remembered().filter((o) => o.orgId !== session.orgId);
  return (
    <div class="org" ref={box}>
      <button type="button" class="btn org-button" aria-expanded={open} aria-controls="org-menu" onClick={() => setOpen(!open)}>
        <span class="org-name">{session.orgName ?? session.orgId}</span>
        <span class="org-who muted">{session.email}</span>
      </button>
      <div id="org-menu" class={`org-menu${open ? '' : ' hidden'}`}>
        <p class="muted small">
          Signed in as {session.email} ({session.role}) to <code>{session.orgId}</code>
        </p>
        {others.length > 0 && (
          <>
            <p class="small menu-label">Switch organization</p>
            <ul>
              {others.map((o) => (
                <li key={o.orgId}>
                  <button type="button" class="menu-item" onClick={() => onSwitch(o.orgId)}>
                    {o.orgName ?? o.orgId}
                    <span class="muted small">
                      {' '}
                      {o.email}
                      {o.token ? '' : ' · sign in'}
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          </>
        )}
        <button type="button" class="menu-item" onClick={onAddOrg}>
          Sign in to another organization…
        </button>
        <button type="button" class="menu-item danger-text" onClick={onSignOut}>
          Sign out
        </button>
      </div>
    </div>
  );
}
