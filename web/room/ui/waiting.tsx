import { Card } from './common.tsx';

/** The waiting room: the page moves into the room by itself when a host admits it. */
export function Waiting({ title, onLeave }: { title: string; onLeave: () => void }) {
  return (
    <Card title="Waiting for a host to let you in…" busy>
      <p id="status" class="muted">
        {title}. You will join automatically when a host admits you; keep this page open.
      </p>
      <button class="btn" onClick={onLeave}>
        Leave
      </button>
    </Card>
  );
}
