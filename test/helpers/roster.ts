import type { RosterEntry } from '../../src/core/room.ts';

/** A roster entry as the room sends it: a connected participant named by its id, unless said otherwise. */
export const person = (id: string, over: Partial<RosterEntry> = {}): RosterEntry => ({
  participantId: id,
  userId: `usr_${id}`,
  name: id,
  roomRole: 'PARTICIPANT',
  joinedAt: '2030-01-01T10:00:00Z',
  micLocked: false,
  floor: false,
  askedToUnmute: false,
  enteredMuted: false,
  handRaisedAt: null,
  connected: true,
  ...over,
});
