import * as api from '../api.ts';
import { count, utcDay, when } from '../format.ts';
import { href } from '../router.ts';
import { Badge, Empty, Loaded, PageHead, useLoad } from '../ui/common.tsx';
import { Stat } from '../ui/facts.tsx';
import type { Meeting } from './meetings.tsx';

interface UsageDay {
  date: string;
  meetings: number;
  participantMinutes: number;
  peakConcurrentParticipants: number;
}
interface Usage {
  from: string;
  to: string;
  plan: string;
  limits: { maxLiveMeetings: number; maxParticipants: number; maxMeetingMinutes: number };
  days: UsageDay[];
  totals: Omit<UsageDay, 'date'>;
}

/** GET /orgs/:orgId/live (issue 28): the organization's live rooms with the people in each, and the totals. */
interface LiveRoom {
  meetingId: string;
  title: string;
  kind: string;
  startedAt: string | null;
  people: number | null;
  hosts: number | null;
}
interface Live {
  totals: { rooms: number; people: number; hosts: number } | null;
  maxLiveMeetings: number | null;
  rooms: LiveRoom[];
}

const iso = (d: Date) => d.toISOString().slice(0, 10);

/** The usage report from the first of the month or 30 days back, whichever is earlier, to today (UTC). */
function usageRange(now = new Date()): { from: string; to: string } {
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const back = new Date(today.getTime() - 29 * 86_400_000);
  return { from: iso(monthStart < back ? monthStart : back), to: iso(new Date(today.getTime() + 86_400_000)) };
}

/**
 * Live rooms: GET /orgs/:orgId/live where the server has it; on a server without that route, the
 * meetings whose status is LIVE (without head counts), so the page is useful on either.
 */
async function liveRooms(): Promise<Live> {
  try {
    return await api.get<Live>(api.org('/live'), { limit: 50 });
  } catch (e) {
    if (!(e instanceof api.ApiError) || e.code !== 'route_not_found') throw e;
    const page = await api.list<Meeting>('/public/meetings', { status: 'LIVE', limit: 50 });
    return { totals: null, maxLiveMeetings: null, rooms: page.data.map((m) => ({ meetingId: m.id, title: m.title, kind: m.kind, startedAt: m.startedAt, people: null, hosts: null })) };
  }
}

export function Overview() {
  const [usage, reloadUsage] = useLoad(() => api.get<Usage>('/public/usage', usageRange()), 'usage');
  const [live, reloadLive] = useLoad(liveRooms, 'live');
  return (
    <>
      <PageHead title="Overview" sub="Today and this month in your organization's rooms (days in UTC)." />
      <section class="section" aria-labelledby="live-h">
        <div class="section-head">
          <h2 id="live-h">Live now</h2>
          <button type="button" class="btn small" onClick={reloadLive}>
            Refresh
          </button>
        </div>
        <Loaded load={live} what="live rooms" retry={reloadLive}>
          {(live) => (
            <>
              {live.totals && (
                <div class="stats">
                  <Stat label="Rooms live" value={count(live.totals.rooms)} {...(live.maxLiveMeetings !== null ? { sub: `plan allows ${count(live.maxLiveMeetings)} at once` } : {})} />
                  <Stat label="People in rooms" value={count(live.totals.people)} />
                  <Stat label="Hosts in rooms" value={count(live.totals.hosts)} />
                </div>
              )}
              {live.rooms.length === 0 ? (
                <Empty title="No room is live right now." />
              ) : (
                <ul class="cards">
                  {live.rooms.map((r) => (
                    <li key={r.meetingId} class="card-item">
                      <div class="card-main">
                        <a class="strong" href={href(`/meetings/${r.meetingId}`)}>
                          {r.title}
                        </a>{' '}
                        <Badge value="LIVE" />
                        <p class="muted small">
                          {r.kind === 'CLASS' ? 'class' : 'meeting'} · since {when(r.startedAt)}
                          {r.people !== null && (
                            <>
                              {' '}
                              · {count(r.people)} {r.people === 1 ? 'person' : 'people'}, {count(r.hosts)} {r.hosts === 1 ? 'host' : 'hosts'}
                            </>
                          )}
                        </p>
                      </div>
                    </li>
                  ))}
                </ul>
              )}
            </>
          )}
        </Loaded>
      </section>
      <Loaded load={usage} what="usage" retry={reloadUsage}>
        {(u) => <UsageView usage={u} />}
      </Loaded>
    </>
  );
}

function UsageView({ usage }: { usage: Usage }) {
  const today = usage.days.at(-1);
  const month = usage.days.filter((d) => d.date.slice(0, 7) === today?.date.slice(0, 7));
  const sum = (days: UsageDay[], k: 'participantMinutes' | 'meetings') => days.reduce((n, d) => n + d[k], 0);
  const peak = (days: UsageDay[]) => days.reduce((n, d) => Math.max(n, d.peakConcurrentParticipants), 0);
  const last30 = usage.days.slice(-30);
  return (
    <>
      <section class="section" aria-labelledby="usage-h">
        <h2 id="usage-h">Usage</h2>
        <div class="stats">
          <Stat label="Participant minutes today" value={count(today?.participantMinutes ?? 0)} />
          <Stat label="Participant minutes this month" value={count(sum(month, 'participantMinutes'))} />
          <Stat label="Meetings this month" value={count(sum(month, 'meetings'))} />
          <Stat label="Peak at once this month" value={count(peak(month))} sub={`plan allows ${count(usage.limits.maxParticipants)} per meeting`} />
        </div>
      </section>
      <section class="section" aria-labelledby="chart-h">
        <h2 id="chart-h">Participant minutes per day</h2>
        <Chart days={last30} />
      </section>
      <section class="section" aria-labelledby="plan-h">
        <h2 id="plan-h">Plan</h2>
        <dl class="facts">
          <div>
            <dt>Plan</dt>
            <dd>{usage.plan}</dd>
          </div>
          <div>
            <dt>Live meetings at once</dt>
            <dd>{count(usage.limits.maxLiveMeetings)}</dd>
          </div>
          <div>
            <dt>People per meeting</dt>
            <dd>{count(usage.limits.maxParticipants)}</dd>
          </div>
          <div>
            <dt>Meeting length</dt>
            <dd>{count(usage.limits.maxMeetingMinutes)} min</dd>
          </div>
        </dl>
        <p class="small">
          <a href={href('/settings')}>Settings</a> · <a href={href('/meetings', { status: 'LIVE' })}>Live meetings</a>
        </p>
      </section>
    </>
  );
}

/** Bars per day; the same numbers in a table for screen readers (the picture is hidden from them). */
function Chart({ days }: { days: UsageDay[] }) {
  const max = Math.max(1, ...days.map((d) => d.participantMinutes));
  const W = 600;
  const H = 160;
  const bw = W / Math.max(days.length, 1);
  if (!days.some((d) => d.participantMinutes > 0)) return <Empty title="No one was in a room in these 30 days." />;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H + 20}`} preserveAspectRatio="none" aria-hidden="true" focusable="false">
        <line x1="0" y1={H} x2={W} y2={H} class="axis" />
        {days.map((d, i) => {
          const h = (d.participantMinutes / max) * (H - 8);
          return (
            <rect key={d.date} x={i * bw + bw * 0.15} y={H - h} width={bw * 0.7} height={Math.max(h, d.participantMinutes ? 1 : 0)} class="bar" rx="2">
              <title>
                {utcDay(d.date)}: {d.participantMinutes} min
              </title>
            </rect>
          );
        })}
      </svg>
      <figcaption class="chart-axis muted small">
        <span>{days[0] ? utcDay(days[0].date) : ''}</span>
        <span>most in a day: {count(max)} min</span>
        <span>{days.at(-1) ? utcDay(days.at(-1)!.date) : ''}</span>
      </figcaption>
      <table class="sr-only">
        <caption>Participant minutes per day</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Minutes</th>
            <th scope="col">Meetings</th>
          </tr>
        </thead>
        <tbody>
          {days.map((d) => (
            <tr key={d.date}>
              <td>{utcDay(d.date)}</td>
              <td>{d.participantMinutes}</td>
              <td>{d.meetings}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
