import type { Devices } from './devices.ts';
import { MediaClient } from './media.ts';
import { access } from './reducer.ts';
import { CommandError, type RoomSocket } from './socket.ts';
import type { Store } from './store.ts';

/**
 * What this person sends and receives in the room: media started (and started again whenever the room's
 * media moves) over the room socket, and the microphone, camera and screen buttons. A refusal from the
 * server (muted by a host, lecture mode, a role that may not share) becomes a notice.
 */
export class MediaControl {
  client: MediaClient | null = null;
  readonly #store: Store;
  readonly #socket: () => RoomSocket | null;
  readonly #devices: () => Devices;
  readonly #reopenDevices: () => Promise<void>;
  #starting: Promise<void> = Promise.resolve();
  #screen: MediaStream | null = null;

  constructor(o: { store: Store; socket: () => RoomSocket | null; devices: () => Devices; reopenDevices: () => Promise<void> }) {
    this.#store = o.store;
    this.#socket = o.socket;
    this.#devices = o.devices;
    this.#reopenDevices = o.reopenDevices;
  }

  /** Starts (or restarts) media; starts run one after another, and a newer one supersedes an older one. */
  start(): Promise<void> {
    this.#starting = this.#starting.then(() => this.#startNow());
    return this.#starting;
  }

  async #startNow(): Promise<void> {
    const socket = this.#socket();
    if (!socket) return;
    const { send } = access(this.#store.state);
    const again = this.client?.sending() ?? null;
    this.client?.close();
    const media = new MediaClient(socket, () => this.#store.changed(), send);
    this.client = media;
    try {
      await media.start();
      if (!send) return;
      const stream = this.#devices().stream;
      const [mic] = stream?.getAudioTracks() ?? [];
      const [cam] = stream?.getVideoTracks() ?? [];
      // the microphone is produced even when off (paused), so unmuting is instant and hosts see its state
      if (mic) {
        await media.send('mic', mic);
        if (!this.#store.state.micOn) await media.setOn('mic', false);
        else if (media.heldByServer.has('mic')) this.#store.set({ micOn: false });
      }
      if (cam && this.#store.state.camOn) await media.send('camera', cam);
      if (again) for (const [source, track] of again) if (source === 'screen' || source === 'screen-audio') await media.send(source, track).catch(() => {});
    } catch (err) {
      if (this.client === media) this.#store.set({ notice: err instanceof CommandError ? err.message : 'Could not start audio and video.' });
    }
  }

  /** New devices replace what was being sent. */
  async replace(stream: MediaStream): Promise<void> {
    if (!this.client) return;
    const [a] = stream.getAudioTracks();
    const [v] = stream.getVideoTracks();
    if (a && this.client.producers.has('mic')) await this.client.send('mic', a);
    if (v && this.client.producers.has('camera')) await this.client.send('camera', v);
  }

  /** The microphone button. */
  async toggleMic(on = !this.#store.state.micOn): Promise<void> {
    const track = this.#devices().stream?.getAudioTracks()[0];
    if (!track) return this.#store.set({ notice: 'No microphone is available. Allow the microphone in your browser and reload.' });
    track.enabled = on;
    this.#store.set({ micOn: on });
    if (!this.client) return;
    try {
      if (!this.client.producers.has('mic')) await this.client.send('mic', track);
      else await this.client.setOn('mic', on);
    } catch (err) {
      track.enabled = false;
      const code = err instanceof CommandError ? err.code : '';
      this.#store.set({
        micOn: false,
        notice: code === 'muted_by_host' ? 'A host muted you. Ask to unmute, and unmute when they allow it.' : code === 'floor_required' ? 'Only hosts speak in this lecture until a host gives you the floor.' : 'Your microphone could not be turned on.',
      });
    }
  }

  async toggleCamera(on = !this.#store.state.camOn): Promise<void> {
    let track = this.#devices().stream?.getVideoTracks()[0];
    if (!track && on) {
      await this.#reopenDevices();
      track = this.#devices().stream?.getVideoTracks()[0];
    }
    if (!track) return this.#store.set({ notice: 'No camera is available. Allow the camera in your browser and reload.' });
    track.enabled = on;
    this.#store.set({ camOn: on });
    if (!this.client) return;
    try {
      if (on && !this.client.producers.has('camera')) await this.client.send('camera', track);
      else await this.client.setOn('camera', on);
    } catch {
      this.#store.set({ camOn: false, notice: 'Your camera could not be turned on.' });
    }
  }

  async toggleScreen(): Promise<void> {
    if (this.#store.state.screenOn) {
      this.#stopScreen();
      this.#store.set({ screenOn: false });
      await this.client?.stop('screen');
      return;
    }
    try {
      const stream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false });
      const [track] = stream.getVideoTracks();
      if (!track || !this.client) return;
      this.#screen = stream;
      track.addEventListener('ended', () => void (this.#store.state.screenOn && this.toggleScreen()));
      await this.client.send('screen', track);
      this.#store.set({ screenOn: true });
    } catch (err) {
      this.#stopScreen();
      if (err instanceof CommandError) this.#store.set({ notice: 'Screen sharing is not allowed for you in this meeting.' });
    }
  }

  #stopScreen(): void {
    this.#screen?.getTracks().forEach((t) => t.stop());
    this.#screen = null;
  }

  /** The socket closed: its transports are gone with it. */
  stop(): void {
    this.client?.close();
    this.client = null;
  }

  /** The visit is over: nothing is sent any more, the shared screen included. */
  close(): void {
    this.stop();
    this.#stopScreen();
  }
}
