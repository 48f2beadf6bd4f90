import t from 'tap';
import { MEDIA_SOURCES, ROOM_ROLES, RoomAccess, type AccessSettings, type RoomRole, type Standing } from '../../src/core/room-access.ts';

const settings: AccessSettings = { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false };
const standing = (roomRole: RoomRole, o: Partial<Standing> = {}): Standing => ({ roomRole, micLocked: false, floor: false, ...o });

t.test('RoomAccess.command: hosts and cohosts only; a cohost cannot remove a host', async (t) => {
  for (const cmd of ['end', 'remove', 'mute', 'allow-unmute', 'floor', 'admit', 'deny'] as const) {
    t.equal(RoomAccess.command(cmd, 'HOST', 'PARTICIPANT'), null, `HOST ${cmd}`);
    t.equal(RoomAccess.command(cmd, 'COHOST', 'PARTICIPANT'), null, `COHOST ${cmd}`);
    t.equal(RoomAccess.command(cmd, 'PARTICIPANT', 'PARTICIPANT')?.code, 'forbidden', `PARTICIPANT ${cmd}`);
    t.equal(RoomAccess.command(cmd, 'VIEWER')?.code, 'forbidden', `VIEWER ${cmd}`);
  }
  t.equal(RoomAccess.command('remove', 'COHOST', 'HOST')?.code, 'forbidden');
  t.equal(RoomAccess.command('mute', 'COHOST', 'HOST'), null, 'a cohost may mute a host');
  t.equal(RoomAccess.command('remove', 'HOST', 'COHOST'), null);
});

t.test('RoomAccess.produce and send: viewers never, screens by setting, locked and lecture microphones held', async (t) => {
  for (const source of MEDIA_SOURCES) t.equal(RoomAccess.produce(source, 'VIEWER', settings)?.code, 'produce_not_allowed', `VIEWER ${source}`);
  t.equal(RoomAccess.produce('screen', 'PARTICIPANT', settings)?.code, 'produce_not_allowed');
  t.equal(RoomAccess.produce('screen-audio', 'PARTICIPANT', settings)?.code, 'produce_not_allowed');
  t.equal(RoomAccess.produce('screen', 'PARTICIPANT', { allowStudentScreenShare: true }), null);
  t.equal(RoomAccess.produce('screen', 'COHOST', settings), null);
  t.equal(RoomAccess.send('mic', standing('PARTICIPANT', { micLocked: true }), settings)?.code, 'muted_by_host');
  t.equal(RoomAccess.send('camera', standing('PARTICIPANT', { micLocked: true }), settings), null, 'a mute is the microphone\'s');
  const lecture = { ...settings, lectureMode: true };
  t.equal(RoomAccess.send('mic', standing('PARTICIPANT'), lecture)?.code, 'floor_required');
  t.equal(RoomAccess.send('mic', standing('PARTICIPANT', { floor: true }), lecture), null);
  t.equal(RoomAccess.send('mic', standing('COHOST'), lecture), null, 'hosts always speak');
  t.equal(RoomAccess.send('camera', standing('PARTICIPANT'), lecture), null, 'cameras stay allowed in a lecture');
  t.equal(RoomAccess.send('mic', standing('HOST', { micLocked: true }), lecture)?.code, 'muted_by_host', 'a muted host stays muted');
  const screens = { ...settings, allowStudentScreenShare: true };
  t.equal(RoomAccess.send('screen-audio', standing('PARTICIPANT', { micLocked: true }), screens)?.code, 'muted_by_host', 'a muted student\'s shared sound is held like a microphone');
  t.equal(RoomAccess.send('screen-audio', standing('PARTICIPANT'), { ...screens, lectureMode: true })?.code, 'floor_required', 'and needs the floor in a lecture');
  t.equal(RoomAccess.send('screen-audio', standing('PARTICIPANT', { floor: true }), { ...screens, lectureMode: true }), null);
  t.equal(RoomAccess.send('screen', standing('PARTICIPANT', { micLocked: true }), screens), null, 'a muted student\'s screen picture is not held');
  t.equal(RoomAccess.send('screen-audio', standing('COHOST', { micLocked: true }), lecture), null, 'a host\'s own screen sound is not held by a mute of their microphone');
  t.equal(RoomAccess.sends('VIEWER')?.code, 'produce_not_allowed', 'a VIEWER sends nothing (no sending transport)');
  t.equal(RoomAccess.sends('PARTICIPANT'), null);
});

t.test('RoomAccess: link roles, waiting, access lists, entering muted', async (t) => {
  t.equal(RoomAccess.linkRole(undefined, 'STUDENT', false), 'PARTICIPANT');
  t.equal(RoomAccess.linkRole('VIEWER', 'STUDENT', false), 'VIEWER');
  t.match(RoomAccess.linkRole('HOST', 'STUDENT', false), { code: 'role_not_allowed' });
  t.equal(RoomAccess.linkRole('HOST', 'STUDENT', true), 'HOST');
  for (const role of ROOM_ROLES) t.equal(RoomAccess.linkRole(role, 'TEACHER', false), role);
  t.equal(RoomAccess.waits('PARTICIPANT', { waitingRoom: true }), true);
  t.equal(RoomAccess.waits('COHOST', { waitingRoom: true }), false);
  t.equal(RoomAccess.waits('VIEWER', { waitingRoom: false }), false);
  t.equal(RoomAccess.bypassesAccessList('PARTICIPANT', 'u1', 'u1'), true, 'the meeting\'s own host user');
  t.equal(RoomAccess.bypassesAccessList('PARTICIPANT', 'u2', 'u1'), false);
  t.equal(RoomAccess.entersMuted('PARTICIPANT', { muteOnEntry: true }), true);
  t.equal(RoomAccess.entersMuted('HOST', { muteOnEntry: true }), false);
});
