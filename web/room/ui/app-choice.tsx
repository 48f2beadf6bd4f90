import type { AppOffer } from '../reducer.ts';
import { Card } from './common.tsx';

/**
 * The organization's app or the browser. Offered only for an app the organization configured, and its
 * link opens only that app (app-offer.ts); the link works once, in one or the other.
 */
export function AppChoice({ offer, onBrowser }: { offer: AppOffer | null; onBrowser: () => void }) {
  if (!offer) return <Card title="Joining…" text="Checking your link." busy />;
  const open = (label: string, primary: boolean) => (
    <a id="open-app" class={primary ? 'btn primary' : 'btn'} href={offer.href}>
      {label}
    </a>
  );
  const browser = (primary: boolean) => (
    <button id="continue-browser" class={primary ? 'btn primary' : 'btn'} onClick={onBrowser}>
      Continue in the browser
    </button>
  );
  if (offer.step === 'missing') {
    return (
      <Card title="The app did not open" text="It may not be installed on this phone. Continue here in the browser, or install the app and try again.">
        <div class="stack">
          {browser(true)}
          {open('Try the app again', false)}
        </div>
      </Card>
    );
  }
  return (
    <Card
      title="Join the meeting"
      text={
        offer.step === 'legacy'
          ? 'The app did not take the meeting link. Try opening the app once more, or continue here in the browser.'
          : 'Open it in the app, or continue here in the browser. The link works once: in one or the other.'
      }
    >
      <div class="stack">
        {open('Open in the app', true)}
        {browser(false)}
      </div>
    </Card>
  );
}
