import type { State } from '../reducer.ts';
import { Card } from './common.tsx';

/** After leaving, removal, the end of the meeting, or an error: why, and on a full page the way back. */
export function Over({ outcome, redirectUrl, redirectAt }: { outcome: NonNullable<State['outcome']>; redirectUrl: string | null; redirectAt: number | null }) {
  return (
    <Card title={outcome.title} text={outcome.text}>
      {redirectAt && redirectUrl && (
        <p class="muted">
          Taking you back in a few seconds… <a href={redirectUrl}>Continue now</a>
        </p>
      )}
    </Card>
  );
}
