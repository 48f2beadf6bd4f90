import type { Devices } from './devices.ts';
import type { MediaSource } from '../../src/core/room-access.ts';
import type { ProducerPauseReason } from '../../src/core/room-protocol.ts';
import { MediaClient } from './media.ts';
import { access } from './reducer.ts';
import { CommandError, type RoomSocket } from './socket.ts';
import type { Store } from './store.ts';
import { ViewReporter } from './view-reporter.ts';

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
  /** What the page shows, told to the server whenever it changes (view-reporter.ts). */
  readonly view: ViewReporter;

  constructor(o: { store: Store; socket: () => RoomSocket | null; devices: () => Devices; reopenDevices: () => Promise<void> }) {
    this.#store = o.store;
    this.#socket = o.socket;
    this.#devices = o.devices;
    this.#reopenDevices = o.reopenDevices;
    this.view = new ViewReporter(
      (view) => this.client?.view(view) ?? null,
      () => this.#store.state.audioOnly,
      () => this.#store.state.participantId,
    );
    o.store.subscribe(() => this.view.schedule());
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
    const media = new MediaClient(socket, send, {
      changed: () => this.#store.changed(),
      closedByServer: (source, reason) => this.#closedByServer(source, reason),
      shown: () => this.view.shown,
      mediaError: (code) => {
        if (this.client === media) this.#store.dispatch({ type: 'media-error', code });
      },
      rebuild: () => {
        if (this.client === media) void this.start();
      },
      // a blocked network stays reported while the media starts again; it clears once a path connects
      initialError: this.#store.state.mediaError,
      // media stopped arriving: a dead socket is found now (not after the heartbeat), and its reconnect resumes the media
      stalled: () => void this.#socket()?.probe(1000),
    });
    this.client = media;
    try {
      await media.start();
      if (this.client === media) this.view.restart();
      // captions follow the media (a new media join starts without them on the server)
      if (this.client === media && this.#store.state.captions.on) void socket.ask({ type: 'captions', on: true }).catch(() => {});
      if (this.client === media && !media.receivesVideo) {
        this.#store.set({ notice: "This browser cannot play the class's video. You can hear the class; for video, open the link in a current Chrome, Edge, Firefox or Safari." });
      }
      if (!send) return;
      await this.#sendDevices(media);
      if (again) for (const [source, track] of again) if (source === 'screen' || source === 'screen-audio') await media.send(source, track).catch(() => {});
    } catch (err) {
      if (this.client === media) this.#store.set({ notice: err instanceof CommandError ? err.message : 'Could not start audio and video.' });
    }
  }

  /**
   * The devices' tracks, sent: a new track replaces the one sent for its source, and one not sent yet
   * starts (the devices may open after the media started: a quick Join, a slow camera). The microphone
   * is produced even when off (paused), so unmuting is instant and hosts see its state.
   */
  async #sendDevices(media: MediaClient): Promise<void> {
    const stream = this.#devices().stream;
    const [mic] = stream?.getAudioTracks() ?? [];
    const [cam] = stream?.getVideoTracks() ?? [];
    if (mic) {
      const started = !media.producers.has('mic');
      await media.send('mic', mic);
      if (started && !this.#store.state.micOn) await media.setOn('mic', false);
      else if (started && media.heldByServer.has('mic')) this.#store.set({ micOn: false });
    }
    if (cam && (media.producers.has('camera') || this.#store.state.camOn)) await media.send('camera', cam);
  }

  /** New devices (or the first ones, opened after the media started): sent, after any start under way. */
  replace(): Promise<void> {
    this.#starting = this.#starting.then(async () => {
      const media = this.client;
      if (!media || !access(this.#store.state).send) return;
      await this.#sendDevices(media).catch((err) => {
        if (this.client === media) this.#store.set({ notice: err instanceof CommandError ? err.message : 'Could not send your camera or microphone.' });
      });
    });
    return this.#starting;
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

  /** The server closed a producer: its capture stops and its button says so (a screen share the setting no longer allows, a camera a host turned off). */
  #closedByServer(source: MediaSource, reason: ProducerPauseReason): void {
    if (source === 'screen') {
      this.#stopScreen();
      this.#store.set({ screenOn: false, notice: reason === 'policy' ? 'Screen sharing was turned off for you in this meeting.' : 'Your screen share was stopped.' });
    } else if (source === 'camera') {
      const track = this.#devices().stream?.getVideoTracks()[0];
      if (track) track.enabled = false;
      this.#store.set({ camOn: false, notice: reason === 'stopped-by-host' ? 'A host turned off your camera. You can turn it on again.' : 'Your camera was turned off.' });
    }
  }

  #stopScreen(): void {
    this.#screen?.getTracks().forEach((t) => t.stop());
    this.#screen = null;
  }

  /**
   * The room socket came back: the media carries on over it if the server kept it (a blip within the
   * reconnect grace: nobody else sees anything close, the screen share and the microphone go on);
   * otherwise it starts again and sends the same tracks.
   */
  resume(): Promise<void> {
    this.#starting = this.#starting.then(async () => {
      const socket = this.#socket();
      const media = this.client;
      if (!socket) return;
      if (media) {
        const resumed = await media.resume(socket).catch(() => false);
        if (resumed && this.client === media) {
          this.view.restart();
          await this.#sendDevices(media).catch(() => {});
          return;
        }
      }
      await this.#startNow();
    });
    return this.#starting;
  }

  /** The socket closed for good: its transports are gone with it. */
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
