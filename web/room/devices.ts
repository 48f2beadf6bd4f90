/**
 * The camera and microphone: the stream the pre-join previews and the room sends, the devices to choose
 * from, and which ones were chosen.
 */

export interface Devices {
  stream: MediaStream | null;
  mics: MediaDeviceInfo[];
  cams: MediaDeviceInfo[];
  micId: string | null;
  camId: string | null;
  /** the user refused (or has no) camera and microphone: they join as a listener */
  denied: boolean;
}

export const NO_DEVICES: Devices = { stream: null, mics: [], cams: [], micId: null, camId: null, denied: false };

const HD = { width: { ideal: 1280 }, height: { ideal: 720 } };

/** A stream of the chosen devices (the browser's defaults until a choice), replacing the one before; rejects when the browser gives none. */
export async function openDevices(was: Devices): Promise<Devices> {
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: was.micId ? { deviceId: { exact: was.micId } } : true,
    video: was.camId ? { deviceId: { exact: was.camId }, ...HD } : HD,
  });
  stopTracks(was.stream);
  const all = await navigator.mediaDevices.enumerateDevices();
  return {
    stream,
    mics: all.filter((d) => d.kind === 'audioinput'),
    cams: all.filter((d) => d.kind === 'videoinput'),
    micId: stream.getAudioTracks()[0]?.getSettings().deviceId ?? null,
    camId: stream.getVideoTracks()[0]?.getSettings().deviceId ?? null,
    denied: false,
  };
}

/** A track that is off sends silence or black until it is on again (before joining: the preview and the meter). */
export function enableTracks(stream: MediaStream | null, micOn: boolean, camOn: boolean): void {
  stream?.getAudioTracks().forEach((t) => (t.enabled = micOn));
  stream?.getVideoTracks().forEach((t) => (t.enabled = camOn));
}

export function stopTracks(stream: MediaStream | null): void {
  stream?.getTracks().forEach((t) => t.stop());
}
