import { useEffect, useReducer } from 'preact/hooks';
import type { RoomController } from '../controller.ts';
import { access } from '../reducer.ts';
import type { Store } from '../store.ts';
import { AppChoice } from './app-choice.tsx';
import { Card } from './common.tsx';
import { Over } from './over.tsx';
import { PreJoin } from './prejoin.tsx';
import { Room } from './room.tsx';
import { Waiting } from './waiting.tsx';

/** The views, one per phase: the root reads the store and hands each view the slice it shows and the controller's methods it calls. */

function useStore(store: Store): void {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    const off = store.subscribe(() => rerender(undefined));
    rerender(undefined); // the state may have changed between the first render and this effect
    return off;
  }, [store]);
}

export function App({ c }: { c: RoomController }) {
  useStore(c.store);
  const s = c.state;
  switch (s.phase) {
    case 'loading':
      return <Card title="Joining…" text="Checking your link." busy />;
    case 'app-choice':
      return <AppChoice offer={s.appOffer} onBrowser={() => void c.continueInBrowser()} />;
    case 'prejoin':
      return <PreJoin session={s.session!} devices={c.devices} micOn={s.micOn} camOn={s.camOn} send={access(s).send} act={c} />;
    case 'waiting':
      return <Waiting title={s.session!.meeting.title} onLeave={() => void c.leave()} />;
    case 'over':
    case 'error':
      return <Over outcome={s.outcome!} redirectUrl={s.session?.redirectUrl ?? null} redirectAt={s.redirectAt} />;
    default:
      return (
        <Room
          state={s}
          media={{ remote: [...(c.media?.remote.values() ?? [])], micHeld: c.media?.heldByServer.get('mic'), camera: c.devices.stream?.getVideoTracks()[0] ?? null }}
          act={c}
        />
      );
  }
}
