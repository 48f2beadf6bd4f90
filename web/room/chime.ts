/**
 * The hosts' optional alert sound: two short soft tones made with Web Audio (no file to fetch). A
 * browser that blocks sound until the user interacts with the page plays nothing; the toast still shows.
 */
let context: AudioContext | null = null;

export function chime(): void {
  try {
    context ??= new AudioContext();
    const now = context.currentTime;
    for (const [i, hz] of [660, 880].entries()) {
      const osc = context.createOscillator();
      const gain = context.createGain();
      osc.frequency.value = hz;
      gain.gain.setValueAtTime(0.0001, now + i * 0.15);
      gain.gain.exponentialRampToValueAtTime(0.15, now + i * 0.15 + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + i * 0.15 + 0.25);
      osc.connect(gain).connect(context.destination);
      osc.start(now + i * 0.15);
      osc.stop(now + i * 0.15 + 0.3);
    }
  } catch {
    // no audio here: the toast is enough
  }
}
