import { meetingEvent } from '../../../actors/meeting/meeting.schemas.ts';
import type { MeetingEvent, MeetingReplies } from '../../../actors/meeting/meeting.types.ts';
import { waitingRoomEvent } from '../../../actors/waiting-room/waiting-room.schemas.ts';
import type { WaitingRoomEvent, WaitingRoomReplies } from '../../../actors/waiting-room/waiting-room.types.ts';
import type { Cluster } from '../../platform/cluster/cluster.ts';
import { meetingActor, waitingRoomActor } from '../../platform/runtime/actor-ids.ts';
import { typedActorClient, type TypedActorClient } from './actor-client.ts';

export type MeetingClient = TypedActorClient<MeetingEvent, MeetingReplies>;
export type WaitingRoomClient = TypedActorClient<WaitingRoomEvent, WaitingRoomReplies>;

/** The typed ways to reach a meeting's actors: `meeting.join(meetingId, {...})`, `waitingRoom.admit(meetingId, {...})`. */
export interface RoomClients {
  meeting: MeetingClient;
  waitingRoom: WaitingRoomClient;
}

export function roomClients(cluster: Cluster): RoomClients {
  return {
    meeting: typedActorClient<MeetingEvent, MeetingReplies>(cluster, meetingEvent, meetingActor),
    waitingRoom: typedActorClient<WaitingRoomEvent, WaitingRoomReplies>(cluster, waitingRoomEvent, waitingRoomActor),
  };
}
