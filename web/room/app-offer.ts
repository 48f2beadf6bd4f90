import type { AppOffer } from './reducer.ts';

/**
 * The organization's app, offered on a phone of its platform before the exchange. On Android the first
 * link is the join URL itself, the one the OS hands a verified app, as an intent pinned to the
 * organization's package: no other app can take it. If that app cannot (an older version), Chrome
 * returns to this page with `app=legacy` and the page offers the spec's `svc://join?token=`, pinned to
 * the same package; if that fails too, `app=missing`. On iOS the link is the join URL (a universal link).
 */

/** The JSON block of the join page's shell (http/pages/join.ts, JoinBoot): the organization's apps. */
interface JoinBoot {
  apps?: { android?: string | null; ios?: boolean };
}

/** The server accepts no other package name; checked again here because it is written into a URL. */
const ANDROID_PACKAGE = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

/** An iPhone or iPad (iPadOS Safari says it is a Mac, but a Mac has no touch screen). */
function isIos(): boolean {
  return /iPhone|iPad|iPod/.test(navigator.userAgent) || (/Macintosh/.test(navigator.userAgent) && navigator.maxTouchPoints > 1);
}

/** The app to offer for this link on this phone, or null (an embedded page never offers one). */
export function appOffer(token: string | null, o: { embedded: boolean; android: boolean }): AppOffer | null {
  if (o.embedded || !token) return null;
  let boot: JoinBoot = {};
  try {
    boot = JSON.parse(document.getElementById('aula-join')?.textContent ?? '{}') as JoinBoot;
  } catch {
    return null;
  }
  const at = new URLSearchParams(location.hash.slice(1)).get('app');
  const joinUrl = `${location.origin}${location.pathname}#jt=${token}`;
  const pkg = boot.apps?.android;
  if (o.android && typeof pkg === 'string' && ANDROID_PACKAGE.test(pkg)) {
    // where Chrome sends the tab when the app cannot take the intent: this page, one step on
    const back = (step: string) => {
      const hash = new URLSearchParams(location.hash.slice(1));
      hash.set('app', step);
      return encodeURIComponent(`${location.origin}${location.pathname}#${hash}`);
    };
    // Intent.parseUri takes the data up to the last '#', so the join URL keeps its own fragment
    const verified = `intent://${location.host}${location.pathname}#jt=${token}#Intent;scheme=${location.protocol.slice(0, -1)};package=${pkg};S.browser_fallback_url=${back('legacy')};end`;
    const legacy = `intent://join?token=${encodeURIComponent(token)}#Intent;scheme=svc;package=${pkg};S.browser_fallback_url=${back('missing')};end`;
    if (at === 'legacy') return { platform: 'android', step: 'legacy', href: legacy };
    return { platform: 'android', step: at === 'missing' ? 'missing' : 'verified', href: verified };
  }
  if (!o.android && boot.apps?.ios === true && isIos()) return { platform: 'ios', step: 'verified', href: joinUrl };
  return null;
}
