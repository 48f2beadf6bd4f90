import type { MediaHealth } from '../../src/core/room-protocol.ts';

/** What hosts see of each person's connection (media-health), in words: pure, so it is tested without a browser. */

/** A person's connection in a word: cannot connect (a media error), poor (quality 2 or less), or good. */
export const standing = (h: MediaHealth | undefined, quality: number | undefined): 'blocked' | 'poor' | 'good' | null =>
  h?.error ? 'blocked' : quality === undefined ? null : quality <= 2 ? 'poor' : 'good';
export const STANDING_LABEL = { blocked: "Can't connect audio and video", poor: 'Poor connection', good: 'Good connection' } as const;

/** For hosts: the room's connections in one line (how many connect well, poorly, not at all, and through a relay). */
export function healthLine(roster: { participantId: string }[], health: Record<string, MediaHealth>, quality: Record<string, number>): string {
  const n = { good: 0, poor: 0, blocked: 0 };
  let relayed = 0;
  for (const p of roster) {
    const st = standing(health[p.participantId], quality[p.participantId]);
    if (st) n[st]++;
    if (health[p.participantId]?.relayed) relayed++;
  }
  const parts = [`${n.good} good`, `${n.poor} poor`, `${n.blocked} cannot connect`];
  if (relayed) parts.push(`${relayed} through a relay`);
  return `Connections: ${parts.join(' · ')}`;
}

