/** The ids of the room actors: `<kind>:<entityId>`, one meeting actor and one waiting-room actor per meeting. */
export const meetingActor = (meetingId: string) => `meeting:${meetingId}`;
export const waitingRoomActor = (meetingId: string) => `waiting-room:${meetingId}`;
