/**
 * RoomAccess: the one policy for who may do what in a room. It reads only what it is given (the
 * session's room role, the user's organization role, the meeting's settings and the participant's
 * standing in the room), so the HTTP routes, the media gateway, the meeting actor and the media rooms
 * all ask the same questions and get the same answers. Refusals carry a catalog code and a message.
 *
 * Pure and import-free at run time: actors and the browser bundle use it too.
 */

import type { UserRole } from './domain.ts';

export const ROOM_ROLES = ['HOST', 'COHOST', 'PARTICIPANT', 'VIEWER'] as const;
export type RoomRole = (typeof ROOM_ROLES)[number];

/** What a producer carries. `screen-audio` is the sound of a shared tab or screen. */
export const MEDIA_SOURCES = ['mic', 'camera', 'screen', 'screen-audio'] as const;
export type MediaSource = (typeof MEDIA_SOURCES)[number];

/** The sources that carry sound. */
export const isAudio = (source: MediaSource): boolean => source === 'mic' || source === 'screen-audio';

/** The meeting settings the policy reads. */
export interface AccessSettings {
  waitingRoom: boolean;
  muteOnEntry: boolean;
  lectureMode: boolean;
  allowStudentScreenShare: boolean;
}

/** A participant's standing in a live room, as the meeting actor keeps it. */
export interface Standing {
  roomRole: RoomRole;
  /** A host muted the microphone; it stays off until a host allows unmuting. */
  micLocked: boolean;
  /** In lecture mode, a host gave this participant the floor. */
  floor: boolean;
}

export type RefusalCode =
  | 'forbidden'
  | 'role_not_allowed'
  | 'produce_not_allowed'
  | 'muted_by_host'
  | 'floor_required'
  | 'not_found'
  | 'meeting_locked'
  | 'meeting_full'
  | 'chat_not_allowed';

/** A live room, as far as admitting one more person goes. */
export interface Occupancy {
  /** A host locked the room. */
  locked: boolean;
  /** It holds as many people (hosts included) as it takes. */
  full: boolean;
  /** The most it takes (the meeting's maxParticipants setting or the plan's cap, the lower), when known. */
  cap: number | null;
}

export interface Refused {
  code: RefusalCode;
  message: string;
}

/** null: allowed. */
export type Decision = Refused | null;

/** Room commands that only hosts and cohosts may give. */
export const HOST_COMMANDS = ['end', 'remove', 'mute', 'allow-unmute', 'floor', 'admit', 'deny', 'lower-hand', 'lock', 'poll', 'answer-question', 'spotlight', 'stop-camera', 'chat', 'record'] as const;
export type HostCommand = (typeof HOST_COMMANDS)[number];

const refused = (code: RefusalCode, message: string): Refused => ({ code, message });

export const RoomAccess = {
  isHost(role: RoomRole): boolean {
    return role === 'HOST' || role === 'COHOST';
  },

  /**
   * The room role a join link may carry: teachers and admins may hold any role; a student is HOST or
   * COHOST only when asked for explicitly by a caller allowed to raise them (an API key with meetings:write).
   */
  linkRole(asked: RoomRole | undefined, orgRole: UserRole, mayRaiseStudents: boolean): RoomRole | Refused {
    const role = asked ?? 'PARTICIPANT';
    if (orgRole !== 'STUDENT' || !RoomAccess.isHost(role) || mayRaiseStudents) return role;
    return refused('role_not_allowed', 'A STUDENT may be HOST or COHOST only when a key with meetings:write asks for it explicitly.');
  },

  /** Whether a session waits in the waiting room before it may enter. Hosts and cohosts never wait. */
  waits(role: RoomRole, settings: Pick<AccessSettings, 'waitingRoom'>): boolean {
    return settings.waitingRoom && !RoomAccess.isHost(role);
  },

  /** Hosts, cohosts and the meeting's own host user pass the ENROLLED and INVITED checks. */
  bypassesAccessList(role: RoomRole, userId: string, hostUserId: string): boolean {
    return RoomAccess.isHost(role) || userId === hostUserId;
  },

  /**
   * A host command given by `by` (about `target`, when it has one). A cohost may not remove a host.
   * A command from the public API has no room role and is checked by its API scope instead.
   */
  command(command: HostCommand, by: RoomRole, target?: RoomRole): Decision {
    if (!RoomAccess.isHost(by)) return refused('forbidden', 'Only a host or cohost of the room may do this.');
    if (command === 'remove' && target === 'HOST' && by === 'COHOST') return refused('forbidden', 'A cohost cannot remove a host.');
    if (command === 'stop-camera' && target === 'HOST' && by === 'COHOST') return refused('forbidden', 'A cohost cannot turn off a host\'s camera.');
    return null;
  },

  /**
   * Whether someone new may enter a live room: a locked or full room refuses everyone but hosts and
   * cohosts (a teacher is never kept out of their own class). Someone already in (a reconnect) is not asked.
   */
  admits(role: RoomRole, room: Occupancy): Decision {
    if (RoomAccess.isHost(role)) return null;
    if (room.locked) return refused('meeting_locked', 'A host locked the meeting: nobody new may join until it is unlocked.');
    if (room.full) return refused('meeting_full', room.cap === null ? 'The meeting has as many participants as it allows.' : `The meeting has as many participants as it allows (${room.cap}).`);
    return null;
  },

  /** Whether the role may send anything at all (and so hold a sending transport). */
  sends(role: RoomRole): Decision {
    return role === 'VIEWER' ? refused('produce_not_allowed', 'A VIEWER watches and listens; it cannot send audio, video or a screen.') : null;
  },

  /** Whether the role may send this source at all (before any mute). */
  produce(source: MediaSource, role: RoomRole, settings: Pick<AccessSettings, 'allowStudentScreenShare'>): Decision {
    const none = RoomAccess.sends(role);
    if (none) return none;
    if ((source === 'screen' || source === 'screen-audio') && !RoomAccess.isHost(role) && !settings.allowStudentScreenShare) {
      return refused('produce_not_allowed', 'Screen sharing is for hosts and cohosts in this meeting.');
    }
    return null;
  },

  /**
   * Whether the participant's producer of this source may be live (not paused by the server) now:
   * a host-muted participant sends no audio until a host allows unmuting, and in lecture mode only
   * hosts and those given the floor send audio. Every audio source a non-host sends is held alike:
   * a shared tab's sound is a voice as much as a microphone is. A host's own screen audio is not
   * held by a mute of their microphone (a teacher muted by a cohost still plays a video to the class).
   */
  send(source: MediaSource, p: Standing, settings: Pick<AccessSettings, 'lectureMode' | 'allowStudentScreenShare'>): Decision {
    const base = RoomAccess.produce(source, p.roomRole, settings);
    if (base) return base;
    if (!isAudio(source)) return null;
    if (source === 'screen-audio' && RoomAccess.isHost(p.roomRole)) return null;
    if (p.micLocked) return refused('muted_by_host', 'A host muted you; ask to unmute and wait until a host allows it.');
    if (settings.lectureMode && !RoomAccess.isHost(p.roomRole) && !p.floor) {
      return refused('floor_required', 'This is a lecture: only hosts speak until a host gives you the floor.');
    }
    return null;
  },

  /** muteOnEntry: a student's first microphone starts paused by the server (they may unmute themselves). */
  entersMuted(role: RoomRole, settings: Pick<AccessSettings, 'muteOnEntry'>): boolean {
    return settings.muteOnEntry && !RoomAccess.isHost(role);
  },
} as const;
