import { RoomAccess, type Decision, type RoomRole } from './room-access.ts';

/**
 * The room's chat and reactions (docs/chat.md): who may write what, under the meeting's two settings,
 * decided here once for the server (which refuses) and the page (which offers only what is allowed).
 *
 * There is one public channel, and for each student one private conversation with the hosts: a student
 * writes privately to "the hosts" (every host and cohost reads it), a host writes privately to one
 * student; students never write to each other privately.
 */

/** `everyone`: anyone in the room writes to the room; `hosts-only`: only hosts and cohosts do, the others read; `off`: no public chat. */
export const CHAT_MODES = ['everyone', 'hosts-only', 'off'] as const;
export type ChatMode = (typeof CHAT_MODES)[number];

/** The meeting settings the chat reads. `privateChatToHosts`: students may write privately to the hosts. */
export interface ChatSettings {
  chat: ChatMode;
  privateChatToHosts: boolean;
}

export const CHAT_DEFAULTS: ChatSettings = { chat: 'everyone', privateChatToHosts: true };

export const CHAT_LIMITS = {
  /** One message's text, in characters. */
  textChars: 1000,
  /** Messages a page is given when it joins (the newest; the API has them all). */
  history: 200,
} as const;

/** The quick reactions: a few, so that they stay a gesture and not a second chat. */
export const REACTIONS = ['👍', '👏', '❤️', '😂', '😮', '🎉'] as const;
export type Reaction = (typeof REACTIONS)[number];
/** How long a reaction floats over its sender's tile. */
export const REACTION_SHOW_MS = 4000;

/** Where a message goes: the room, the hosts (a student's private message), or one student (a host's private message). */
export type ChatTarget = { to: 'everyone' } | { to: 'hosts' } | { to: 'participant'; role: RoomRole | undefined };

/** A message as the room shows it and the API lists it (the public ones). */
export interface ChatMessageView {
  messageId: string;
  /** Who wrote it, as the room knew them (a deleted account reads "Deleted user"). */
  participantId: string;
  name: string;
  roomRole: RoomRole;
  text: string;
  sentAt: string;
  /** null: to the room. Otherwise the private conversation of this student with the hosts. */
  privateWith: { participantId: string; name: string } | null;
}

const refused = (message: string): Decision => ({ code: 'chat_not_allowed', message });

export const Chat = {
  /** Whether `role` may send to `target` under these settings. */
  send(role: RoomRole, target: ChatTarget, s: ChatSettings): Decision {
    const host = RoomAccess.isHost(role);
    if (target.to === 'everyone') {
      if (s.chat === 'off') return refused('The chat is off in this meeting.');
      if (s.chat === 'hosts-only' && !host) return refused('Only hosts write to the room in this meeting; you can read.');
      return null;
    }
    if (target.to === 'hosts') {
      if (host) return refused('Hosts write to the room, or privately to one student.');
      if (!s.privateChatToHosts) return refused('Private messages to the hosts are off in this meeting.');
      return null;
    }
    if (!host) return refused('Students write privately only to the hosts.');
    if (target.role === undefined) return null; // the target's existence is checked by who knows the roster
    if (RoomAccess.isHost(target.role)) return refused('Write to the other hosts in the room, or in a student\'s conversation.');
    return null;
  },

  /** Whether someone of this role sees a message: every public one, and private ones of their own conversation (hosts: all of them). */
  sees(role: RoomRole, participantId: string, m: Pick<ChatMessageView, 'privateWith'>): boolean {
    return m.privateWith === null || RoomAccess.isHost(role) || m.privateWith.participantId === participantId;
  },

  /** What a page offers its person: the room's channel, a private line to the hosts. */
  offers(role: RoomRole, s: ChatSettings): { room: boolean; hosts: boolean } {
    return { room: Chat.send(role, { to: 'everyone' }, s) === null, hosts: Chat.send(role, { to: 'hosts' }, s) === null };
  },
};
