import type { RosterEntry } from '../../../src/core/room.ts';
import { RoomAccess, type RoomRole } from '../../../src/core/room-access.ts';
import type { RoomController } from '../controller.ts';
import type { State } from '../reducer.ts';
import { Avatar, Icon } from './common.tsx';
import { Panel } from './panel.tsx';

/** The people panel: the roster (raised hands first, first raised first), and for hosts the waiting list and the room's controls. */

const ROLE_LABEL: Record<RoomRole, string> = { HOST: 'Host', COHOST: 'Co-host', PARTICIPANT: 'Participant', VIEWER: 'Viewer' };

export function People({
  room: s,
  role,
  act,
  onClose,
}: {
  room: Pick<State, 'roster' | 'participantId' | 'sources' | 'waitingList' | 'roomLocked'>;
  role: RoomRole;
  act: Pick<RoomController, 'command' | 'admitAll'>;
  onClose: () => void;
}) {
  const host = RoomAccess.isHost(role);
  const may = (command: 'lower-hand' | 'mute' | 'allow-unmute' | 'remove', target: RosterEntry) => RoomAccess.command(command, role, target.roomRole) === null;
  const sorted = [...s.roster].sort((a, b) => (a.handRaisedAt && b.handRaisedAt ? a.handRaisedAt.localeCompare(b.handRaisedAt) : a.handRaisedAt ? -1 : b.handRaisedAt ? 1 : a.joinedAt.localeCompare(b.joinedAt)));
  const hands = sorted.filter((p) => p.handRaisedAt);
  return (
    <Panel label="People" title={`People (${s.roster.length})`} control="People" onClose={onClose}>
      {host && s.waitingList.length > 0 && (
        <section aria-label="Waiting room" class="waiting-list">
          <h3>Waiting to join ({s.waitingList.length})</h3>
          <ul>
            {s.waitingList.map((e) => (
              <li key={e.queueId}>
                <span class="name">{e.name}</span>
                <span class="actions">
                  <button class="btn small primary" aria-label={`Admit ${e.name}`} onClick={() => void act.command({ type: 'admit', queueId: e.queueId })}>
                    Admit
                  </button>
                  <button class="btn small" aria-label={`Deny ${e.name}`} onClick={() => void act.command({ type: 'deny', queueId: e.queueId })}>
                    Deny
                  </button>
                </span>
              </li>
            ))}
          </ul>
          {s.waitingList.length > 1 && (
            <button class="btn small" onClick={() => void act.admitAll()}>
              Admit all
            </button>
          )}
        </section>
      )}
      {host && (
        <div class="row-actions">
          <button class="btn small" onClick={() => void act.command({ type: 'mute-all' })}>
            Mute all
          </button>
          {hands.length > 0 && (
            <button class="btn small" onClick={() => void act.command({ type: 'lower-all-hands' })}>
              Lower all hands
            </button>
          )}
          <button class="btn small" id="lock" aria-pressed={s.roomLocked} onClick={() => void act.command({ type: 'lock', locked: !s.roomLocked })}>
            {s.roomLocked ? 'Unlock meeting' : 'Lock meeting'}
          </button>
        </div>
      )}
      <ul class="roster">
        {sorted.map((p) => {
          const me = p.participantId === s.participantId;
          const src = s.sources[p.participantId] ?? {};
          // RoomAccess decides each (a cohost may not remove a host); one's own row has none
          const lower = !me && !!p.handRaisedAt && may('lower-hand', p);
          const unmute = !me && (p.micLocked || p.askedToUnmute) && may('allow-unmute', p);
          const mute = !me && !(p.micLocked || p.askedToUnmute) && may('mute', p);
          const remove = !me && may('remove', p);
          return (
            <li key={p.participantId} class={p.connected ? '' : 'away'}>
              <Avatar name={p.name} />
              <div class="who">
                <span class="name">
                  {p.name}
                  {me ? ' (you)' : ''}
                </span>
                <span class="muted small">
                  {ROLE_LABEL[p.roomRole]}
                  {p.connected ? '' : ' · reconnecting'}
                  {p.askedToUnmute ? ' · asks to unmute' : ''}
                </span>
              </div>
              <span class="states">
                {p.handRaisedAt && (
                  <span title="Hand raised" aria-label="Hand raised" class="hand">
                    <Icon name="hand" />
                  </span>
                )}
                <span aria-label={src.mic === 'on' ? 'Microphone on' : 'Microphone off'} title={src.mic === 'on' ? 'Microphone on' : 'Microphone off'}>
                  <Icon name="mic" off={src.mic !== 'on'} />
                </span>
                <span aria-label={src.camera === 'on' ? 'Camera on' : 'Camera off'} title={src.camera === 'on' ? 'Camera on' : 'Camera off'}>
                  <Icon name="cam" off={src.camera !== 'on'} />
                </span>
              </span>
              {(lower || unmute || mute || remove) && (
                <span class="actions">
                  {lower && (
                    <button class="btn small" aria-label={`Lower ${p.name}'s hand`} onClick={() => void act.command({ type: 'lower-hand', participantId: p.participantId })}>
                      Lower hand
                    </button>
                  )}
                  {unmute && (
                    <button class="btn small" aria-label={`Allow ${p.name} to unmute`} onClick={() => void act.command({ type: 'allow-unmute', participantId: p.participantId })}>
                      Allow unmute
                    </button>
                  )}
                  {mute && (
                    <button class="btn small" aria-label={`Mute ${p.name}`} onClick={() => void act.command({ type: 'mute', participantId: p.participantId })}>
                      Mute
                    </button>
                  )}
                  {remove && (
                    <button class="btn small danger" aria-label={`Remove ${p.name}`} onClick={() => confirm(`Remove ${p.name} from the meeting?`) && void act.command({ type: 'remove', participantId: p.participantId })}>
                      Remove
                    </button>
                  )}
                </span>
              )}
            </li>
          );
        })}
      </ul>
    </Panel>
  );
}
