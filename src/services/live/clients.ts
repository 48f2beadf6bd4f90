import { meetingEvent } from '../../../actors/meeting/meeting.schemas.ts';
import type { MeetingEvent, MeetingReplies } from '../../../actors/meeting/meeting.types.ts';
import { waitingRoomEvent } from '../../../actors/waiting-room/waiting-room.schemas.ts';
import type { WaitingRoomEvent, WaitingRoomReplies } from '../../../actors/waiting-room/waiting-room.types.ts';
import type { Cluster } from '../../platform/cluster/cluster.ts';
import { meetingActor, waitingRoomActor } from '../../platform/runtime/actor-ids.ts';
import { ActorClient, type ArgList, type CoversEvents } from './actor-client.ts';

/**
 * The meeting actor, one method per event: `meeting.allowUnmute(meetingId, { participantId, by })` asks
 * and resolves with that event's reply (MeetingReplies), a refusal thrown as a RoomRefusal; `send`
 * delivers without waiting. Written out so an editor goes from a call to its event.
 */
export class MeetingClient extends ActorClient<MeetingEvent, MeetingReplies> {
  constructor(cluster: Cluster) {
    super(cluster, meetingEvent, meetingActor);
  }

  init = (id: string, ...args: ArgList<MeetingEvent, 'INIT'>) => this.ask(id, 'INIT', ...args);
  join = (id: string, ...args: ArgList<MeetingEvent, 'JOIN'>) => this.ask(id, 'JOIN', ...args);
  disconnect = (id: string, ...args: ArgList<MeetingEvent, 'DISCONNECT'>) => this.ask(id, 'DISCONNECT', ...args);
  leave = (id: string, ...args: ArgList<MeetingEvent, 'LEAVE'>) => this.ask(id, 'LEAVE', ...args);
  remove = (id: string, ...args: ArgList<MeetingEvent, 'REMOVE'>) => this.ask(id, 'REMOVE', ...args);
  mute = (id: string, ...args: ArgList<MeetingEvent, 'MUTE'>) => this.ask(id, 'MUTE', ...args);
  muteAll = (id: string, ...args: ArgList<MeetingEvent, 'MUTE_ALL'>) => this.ask(id, 'MUTE_ALL', ...args);
  allowUnmute = (id: string, ...args: ArgList<MeetingEvent, 'ALLOW_UNMUTE'>) => this.ask(id, 'ALLOW_UNMUTE', ...args);
  allowUnmuteAll = (id: string, ...args: ArgList<MeetingEvent, 'ALLOW_UNMUTE_ALL'>) => this.ask(id, 'ALLOW_UNMUTE_ALL', ...args);
  knock = (id: string, ...args: ArgList<MeetingEvent, 'KNOCK'>) => this.ask(id, 'KNOCK', ...args);
  startRecording = (id: string, ...args: ArgList<MeetingEvent, 'START_RECORDING'>) => this.ask(id, 'START_RECORDING', ...args);
  stopRecording = (id: string, ...args: ArgList<MeetingEvent, 'STOP_RECORDING'>) => this.ask(id, 'STOP_RECORDING', ...args);
  pauseRecording = (id: string, ...args: ArgList<MeetingEvent, 'PAUSE_RECORDING'>) => this.ask(id, 'PAUSE_RECORDING', ...args);
  askUnmute = (id: string, ...args: ArgList<MeetingEvent, 'ASK_UNMUTE'>) => this.ask(id, 'ASK_UNMUTE', ...args);
  hand = (id: string, ...args: ArgList<MeetingEvent, 'HAND'>) => this.ask(id, 'HAND', ...args);
  lowerAllHands = (id: string, ...args: ArgList<MeetingEvent, 'LOWER_ALL_HANDS'>) => this.ask(id, 'LOWER_ALL_HANDS', ...args);
  lock = (id: string, ...args: ArgList<MeetingEvent, 'LOCK'>) => this.ask(id, 'LOCK', ...args);
  spotlight = (id: string, ...args: ArgList<MeetingEvent, 'SPOTLIGHT'>) => this.ask(id, 'SPOTLIGHT', ...args);
  openPoll = (id: string, ...args: ArgList<MeetingEvent, 'OPEN_POLL'>) => this.ask(id, 'OPEN_POLL', ...args);
  answerPoll = (id: string, ...args: ArgList<MeetingEvent, 'ANSWER_POLL'>) => this.ask(id, 'ANSWER_POLL', ...args);
  closePoll = (id: string, ...args: ArgList<MeetingEvent, 'CLOSE_POLL'>) => this.ask(id, 'CLOSE_POLL', ...args);
  sharePoll = (id: string, ...args: ArgList<MeetingEvent, 'SHARE_POLL'>) => this.ask(id, 'SHARE_POLL', ...args);
  askQuestion = (id: string, ...args: ArgList<MeetingEvent, 'ASK_QUESTION'>) => this.ask(id, 'ASK_QUESTION', ...args);
  upvoteQuestion = (id: string, ...args: ArgList<MeetingEvent, 'UPVOTE_QUESTION'>) => this.ask(id, 'UPVOTE_QUESTION', ...args);
  answerQuestion = (id: string, ...args: ArgList<MeetingEvent, 'ANSWER_QUESTION'>) => this.ask(id, 'ANSWER_QUESTION', ...args);
  dismissQuestion = (id: string, ...args: ArgList<MeetingEvent, 'DISMISS_QUESTION'>) => this.ask(id, 'DISMISS_QUESTION', ...args);
  floor = (id: string, ...args: ArgList<MeetingEvent, 'FLOOR'>) => this.ask(id, 'FLOOR', ...args);
  placeMedia = (id: string, ...args: ArgList<MeetingEvent, 'PLACE_MEDIA'>) => this.ask(id, 'PLACE_MEDIA', ...args);
  roomState = (id: string, ...args: ArgList<MeetingEvent, 'ROOM_STATE'>) => this.ask(id, 'ROOM_STATE', ...args);
  end = (id: string, ...args: ArgList<MeetingEvent, 'END'>) => this.ask(id, 'END', ...args);
  cancel = (id: string, ...args: ArgList<MeetingEvent, 'CANCEL'>) => this.ask(id, 'CANCEL', ...args);
  deactivateUser = (id: string, ...args: ArgList<MeetingEvent, 'DEACTIVATE_USER'>) => this.ask(id, 'DEACTIVATE_USER', ...args);
  update = (id: string, ...args: ArgList<MeetingEvent, 'UPDATE'>) => this.ask(id, 'UPDATE', ...args);
  timer = (id: string, ...args: ArgList<MeetingEvent, 'TIMER'>) => this.ask(id, 'TIMER', ...args);
}

/** The waiting room's actor, one method per event, as MeetingClient's. */
export class WaitingRoomClient extends ActorClient<WaitingRoomEvent, WaitingRoomReplies> {
  constructor(cluster: Cluster) {
    super(cluster, waitingRoomEvent, waitingRoomActor);
  }

  enqueue = (id: string, ...args: ArgList<WaitingRoomEvent, 'ENQUEUE'>) => this.ask(id, 'ENQUEUE', ...args);
  admit = (id: string, ...args: ArgList<WaitingRoomEvent, 'ADMIT'>) => this.ask(id, 'ADMIT', ...args);
  deny = (id: string, ...args: ArgList<WaitingRoomEvent, 'DENY'>) => this.ask(id, 'DENY', ...args);
  leave = (id: string, ...args: ArgList<WaitingRoomEvent, 'LEAVE'>) => this.ask(id, 'LEAVE', ...args);
  status = (id: string, ...args: ArgList<WaitingRoomEvent, 'STATUS'>) => this.ask(id, 'STATUS', ...args);
  list = (id: string, ...args: ArgList<WaitingRoomEvent, 'LIST'>) => this.ask(id, 'LIST', ...args);
  timer = (id: string, ...args: ArgList<WaitingRoomEvent, 'TIMER'>) => this.ask(id, 'TIMER', ...args);
  meetingEnded = (id: string, ...args: ArgList<WaitingRoomEvent, 'MEETING_ENDED'>) => this.ask(id, 'MEETING_ENDED', ...args);
}

// Every event of each actor has its method (the compiler says which one is missing).
true satisfies CoversEvents<MeetingClient, MeetingEvent>;
true satisfies CoversEvents<WaitingRoomClient, WaitingRoomEvent>;

/** The typed ways to reach a meeting's actors: `meeting.join(meetingId, {...})`, `waitingRoom.admit(meetingId, {...})`. */
export interface RoomClients {
  meeting: MeetingClient;
  waitingRoom: WaitingRoomClient;
}

export function roomClients(cluster: Cluster): RoomClients {
  return { meeting: new MeetingClient(cluster), waitingRoom: new WaitingRoomClient(cluster) };
}
