import type { RosterEntry } from '../../../src/core/room.ts';
import { RoomAccess, type RoomRole } from '../../../src/core/room-access.ts';
import type { RoomController } from '../controller.ts';
import type { MediaHealth } from '../../../src/core/room-protocol.ts';
import { healthLine, standing, STANDING_LABEL } from '../health.ts';
import type { State } from '../reducer.ts';
import { Avatar, Icon } from './common.tsx';
import { Panel } from './panel.tsx';

/** The people panel: the roster (raised hands first, first raised first), and for hosts the waiting list and the room's controls. */

const ROLE_LABEL: Record<RoomRole, string> = { HOST: 'Host', COHOST: 'Co-host', PARTICIPANT: 'Participant', VIEWER: 'Viewer' };

const pct = (v: number | null) => (v === null ? 'n/a' : `${Math.round(v * 100)}%`);
const rate = (bps: number) => (bps >= 1_000_000 ? `${(bps / 1_000_000).toFixed(1)} Mbit/s` : `${Math.round(bps / 1000)} kbit/s`);

/** For hosts: one person's connection, and its details on click (round trip, loss, bitrate, relayed or direct, audio only). */
function Connection({ name, health: h, quality }: { name: string; health: MediaHealth | undefined; quality: number | undefined }) {
  const st = standing(h, quality);
  if (!st) return null;
  return (
    <details class={`health ${st}`}>
      <summary aria-label={`${name}: ${STANDING_LABEL[st]}. Details`}>{STANDING_LABEL[st]}</summary>
      {h && (
        <dl class="small">
          <dt>Round trip</dt>
          <dd>{h.rttMs === null ? 'n/a' : `${h.rttMs} ms`}</dd>
          <dt>Loss in / out</dt>
          <dd>
            {pct(h.lossDown)} / {pct(h.lossUp)}
          </dd>
          <dt>Receiving / sending</dt>
          <dd>
            {rate(h.bitrateDown)} / {rate(h.bitrateUp)}
          </dd>
          <dt>Path</dt>
          <dd>{h.error ? 'None gets through' : h.relayed ? 'Through a relay' : 'Direct'}</dd>
          {h.audioOnly && (
            <>
              <dt>Video</dt>
              <dd>Audio only</dd>
            </>
          )}
        </dl>
      )}
    </details>
  );
}

export function People({
  room: s,
  role,
  act,
  onClose,
}: {
  room: Pick<State, 'roster' | 'participantId' | 'sources' | 'waitingList' | 'roomLocked' | 'spotlight' | 'pinned' | 'health' | 'quality'>;
  role: RoomRole;
  act: Pick<RoomController, 'command' | 'admitAll' | 'pin' | 'allowUnmuteAll' | 'setChime' | 'chimeOn'>;
  onClose: () => void;
}) {
  const host = RoomAccess.isHost(role);
  const may = (command: 'lower-hand' | 'mute' | 'allow-unmute' | 'remove' | 'spotlight' | 'stop-camera', target: RosterEntry) => RoomAccess.command(command, role, target.roomRole) === null;
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
        <p class="muted small" id="room-health" role="status">
          {healthLine(s.roster, s.health, s.quality)}
        </p>
      )}
      {host && (
        <div class="row-actions">
          <button class="btn small" onClick={() => confirm('Mute everyone? They can ask to unmute, and you can allow it.') && void act.command({ type: 'mute-all' })}>
            Mute all
          </button>
          {s.roster.some((p) => p.micLocked) && (
            <button class="btn small" id="allow-unmute-all" onClick={() => void act.allowUnmuteAll()}>
              Allow everyone to unmute
            </button>
          )}
          <label class="check small" id="chime">
            <input type="checkbox" checked={act.chimeOn} onChange={(e) => act.setChime((e.target as HTMLInputElement).checked)} />
            Sound with alerts
          </label>
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
          const unmute = !me && p.roomRole !== 'VIEWER' && (p.micLocked || p.askedToUnmute) && may('allow-unmute', p);
          const mute = !me && p.roomRole !== 'VIEWER' && !(p.micLocked || p.askedToUnmute) && may('mute', p);
          const remove = !me && may('remove', p);
          const spotlit = s.spotlight === p.participantId;
          const spotlight = p.roomRole !== 'VIEWER' && may('spotlight', p);
          const stopCamera = !me && src.camera === 'on' && may('stop-camera', p);
          const pinned = s.pinned === p.participantId;
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
                {host && !me && <Connection name={p.name} health={s.health[p.participantId]} quality={s.quality[p.participantId]} />}
              </div>
              <span class="states">
                {p.handRaisedAt && (
                  <span role="img" title="Hand raised" aria-label="Hand raised" class="hand">
                    <Icon name="hand" />
                  </span>
                )}
                <span role="img" aria-label={src.mic === 'on' ? 'Microphone on' : 'Microphone off'} title={src.mic === 'on' ? 'Microphone on' : 'Microphone off'}>
                  <Icon name="mic" off={src.mic !== 'on'} />
                </span>
                <span role="img" aria-label={src.camera === 'on' ? 'Camera on' : 'Camera off'} title={src.camera === 'on' ? 'Camera on' : 'Camera off'}>
                  <Icon name="cam" off={src.camera !== 'on'} />
                </span>
              </span>
              <span class="actions">
                {!me && p.roomRole !== 'VIEWER' && (
                  <button class="btn small" aria-pressed={pinned} aria-label={pinned ? `Unpin ${p.name}` : `Pin ${p.name}`} onClick={() => act.pin(pinned ? null : p.participantId)}>
                    {pinned ? 'Unpin' : 'Pin'}
                  </button>
                )}
                {spotlight && (
                  <button class="btn small" aria-pressed={spotlit} aria-label={spotlit ? `Remove spotlight from ${p.name}` : `Spotlight ${p.name} for everyone`} onClick={() => void act.command({ type: 'spotlight', participantId: spotlit ? null : p.participantId })}>
                    {spotlit ? 'Remove spotlight' : 'Spotlight'}
                  </button>
                )}
                {stopCamera && (
                  <button class="btn small" aria-label={`Stop camera of ${p.name}`} onClick={() => void act.command({ type: 'stop-camera', participantId: p.participantId })}>
                    Stop camera
                  </button>
                )}
                {lower && (
                  <button class="btn small" aria-label={`Lower hand of ${p.name}`} onClick={() => void act.command({ type: 'lower-hand', participantId: p.participantId })}>
                    Lower hand
                  </button>
                )}
                {unmute && (
                  <button class="btn small" aria-label={`Allow unmute for ${p.name}`} onClick={() => void act.command({ type: 'allow-unmute', participantId: p.participantId })}>
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
            </li>
          );
        })}
      </ul>
    </Panel>
  );
}
