import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the gauges read when Prometheus scrapes: the node's own state, asked for at that moment. */
export interface MetricSources {
  /** Room sockets open on this node. */
  sockets(): number;
  /** Rooms whose media this node hosts, and their participants, producers and consumers here; `relayed`: participants whose path goes through a TURN relay. */
  media(): Promise<{ rooms: number; participants: number; producers: number; consumers: number; relayed: number }>;
  /** This node's mediasoup workers: each one's share of a core over the last sample, and its consumers. */
  workers(): { index: number; cpu: number; consumers: number }[];
  /** Events waiting in this node's actor mailboxes. */
  mailboxDepth(): number;
  /** Shards this node owns, and the cluster's nodes as the placement names them. */
  shardsOwned(): number;
  clusterNodes(): Promise<number>;
}

const REQUEST_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * One route and method's requests, counted in plain numbers and turned into the counter and histogram
 * series on a scrape. prom-client's labelled children hash their labels on every call (about half a
 * microsecond a request, with performance.now and the lookups about 1.5 µs of a mint's 24: the mint
 * bench's `--ablate no-metrics`); this is a map lookup and a few increments.
 */
export class RouteMeter {
  readonly #statuses = new Map<number, number>();
  /** Requests per bucket (not cumulative); the last slot is past the largest bound. */
  readonly #buckets = new Float64Array(REQUEST_SECONDS.length + 1);
  #sum = 0;
  #count = 0;

  constructor(
    readonly route: string,
    readonly method: string,
  ) {}

  record(status: number, seconds: number): void {
    this.#statuses.set(status, (this.#statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < REQUEST_SECONDS.length && seconds > REQUEST_SECONDS[i]!) i++;
    this.#buckets[i]!++;
    this.#sum += seconds;
    this.#count++;
  }

  counterValues(): { labels: Record<string, string>; value: number }[] {
    return [...this.#statuses].map(([status, value]) => ({ labels: { route: this.route, method: this.method, status: String(status) }, value }));
  }

  histogramValues(name: string): { metricName: string; labels: Record<string, string | number>; value: number }[] {
    if (this.#count === 0) return []; // a route never called has no series yet
    const labels = { route: this.route, method: this.method };
    const out: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    let cumulative = 0;
    REQUEST_SECONDS.forEach((le, i) => {
      cumulative += this.#buckets[i]!;
      out.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
    });
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: this.#count });
    out.push({ metricName: `${name}_sum`, labels, value: this.#sum });
    out.push({ metricName: `${name}_count`, labels, value: this.#count });
    return out;
  }
}

/**
 * One node's Prometheus metrics (prom-client), in a registry of its own: several nodes may share
 * a process (the tests do), so nothing here is global. Counters and histograms are recorded where the
 * work happens; gauges are read from `MetricSources` on each scrape. Names and labels: docs/metrics.md.
 */
export class Metrics {
  readonly registry = new Registry();
  /** `method route` -> its meter, made once. */
  readonly #routes = new Map<string, RouteMeter>();
  readonly #rateLimited: Counter<'limit'>;
  readonly #jobRuns: Counter<'kind' | 'outcome'>;
  readonly #jobSeconds: Histogram<'kind'>;
  readonly #deliveries: Counter<'outcome'>;
  readonly #deliveryLag: Histogram;
  readonly #actorEventSeconds: Histogram<'actor'>;
  readonly #iceRestarts: Counter;
  readonly #roomResumes: Counter;
  readonly #mediaErrors: Counter<'code'>;
  #sources: MetricSources | null = null;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'aula_' });
    // the request series come from the route meters, in prom-client's format for a metric's values
    const routes = this.#routes;
    const requestsHelp = 'HTTP requests answered, by route pattern, method and status.';
    this.registry.registerMetric({
      name: 'aula_http_requests_total',
      help: requestsHelp,
      type: 'counter',
      get: () => ({ name: 'aula_http_requests_total', help: requestsHelp, type: 'counter', aggregator: 'sum', values: [...routes.values()].flatMap((m) => m.counterValues()) }),
    } as never);
    const secondsHelp = 'Time from a request to its answer, by route pattern and method.';
    this.registry.registerMetric({
      name: 'aula_http_request_duration_seconds',
      help: secondsHelp,
      type: 'histogram',
      get: () => ({
        name: 'aula_http_request_duration_seconds',
        help: secondsHelp,
        type: 'histogram',
        aggregator: 'sum',
        values: [...routes.values()].flatMap((m) => m.histogramValues('aula_http_request_duration_seconds')),
      }),
    } as never);
    this.#jobRuns = new Counter({ name: 'aula_job_runs_total', help: 'Background job runs on this node, by kind (users.bulk_upsert, recording.compose) and outcome: succeeded, retry (to be tried again), failed (given up).', labelNames: ['kind', 'outcome'], registers });
    this.#jobSeconds = new Histogram({ name: 'aula_job_run_seconds', help: 'How long a background job run took on this node, by kind.', labelNames: ['kind'], buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 1200], registers });
    this.#rateLimited = new Counter({ name: 'aula_rate_limit_refusals_total', help: 'Requests and room commands refused by a rate limit, by limit.', labelNames: ['limit'], registers });
    this.#deliveries = new Counter({ name: 'aula_webhook_deliveries_total', help: 'Webhook delivery attempts recorded, by outcome: succeeded, retry (failed, another attempt scheduled), failed (the last attempt), gone (410).', labelNames: ['outcome'], registers });
    this.#deliveryLag = new Histogram({
      name: 'aula_webhook_delivery_lag_seconds',
      help: 'From an event\'s commit to the start of its first delivery attempt.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.#actorEventSeconds = new Histogram({
      name: 'aula_actor_event_duration_seconds',
      help: 'From a message reaching an actor\'s mailbox on its owner to its transition committed and answered, by actor (meeting, waiting-room, webhook, maintenance).',
      labelNames: ['actor'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.#iceRestarts = new Counter({ name: 'aula_ice_restarts_total', help: 'ICE restarts answered: a page whose media path broke (a network change, a blip) asked for new ICE credentials.', registers });
    this.#roomResumes = new Counter({ name: 'aula_room_resumes_total', help: 'Room sockets that came back within the reconnect grace and kept their media session.', registers });
    this.#mediaErrors = new Counter({ name: 'aula_media_errors_total', help: 'Media that could not get through a person\'s network, by code (ice_failed, relay_unreachable, media_blocked), once per spell.', labelNames: ['code'], registers });
    const metrics = this;
    new Gauge({ name: 'aula_room_sockets', help: 'Room sockets open on this node.', registers, collect() {
      if (metrics.#sources) this.set(metrics.#sources.sockets());
    } });
    const media = { rooms: 'aula_media_rooms', participants: 'aula_media_participants', producers: 'aula_media_producers', consumers: 'aula_media_consumers', relayed: 'aula_media_relayed_sessions' } as const;
    const helps = {
      rooms: 'Live rooms whose media this node hosts.',
      participants: 'Participants with media on this node.',
      producers: 'mediasoup producers (tracks sent in) on this node.',
      consumers: 'mediasoup consumers (tracks sent out) on this node.',
      relayed: 'Participants with media on this node whose path goes through a TURN relay (as their page reports).',
    };
    // one read of the media state per scrape, shared by the media gauges
    let read: Promise<Awaited<ReturnType<MetricSources['media']>>> | null = null;
    for (const key of Object.keys(media) as (keyof typeof media)[]) {
      new Gauge({ name: media[key], help: helps[key], registers, async collect() {
        if (!metrics.#sources) return;
        read ??= metrics.#sources.media().finally(() => setImmediate(() => (read = null)));
        this.set((await read)[key]);
      } });
    }
    new Gauge({ name: 'aula_media_worker_cpu_ratio', help: 'Each mediasoup worker\'s share of a core, over the last sample.', labelNames: ['worker'], registers, collect() {
      this.reset();
      for (const w of metrics.#sources?.workers() ?? []) this.set({ worker: String(w.index) }, w.cpu);
    } });
    new Gauge({ name: 'aula_media_worker_consumers', help: 'Consumers on each mediasoup worker.', labelNames: ['worker'], registers, collect() {
      this.reset();
      for (const w of metrics.#sources?.workers() ?? []) this.set({ worker: String(w.index) }, w.consumers);
    } });
    new Gauge({ name: 'aula_actor_mailbox_depth', help: 'Events waiting in this node\'s actor mailboxes.', registers, collect() {
      if (metrics.#sources) this.set(metrics.#sources.mailboxDepth());
    } });
    new Gauge({ name: 'aula_cluster_shards_owned', help: 'Shards this node owns.', registers, collect() {
      if (metrics.#sources) this.set(metrics.#sources.shardsOwned());
    } });
    new Gauge({ name: 'aula_cluster_nodes', help: 'Nodes of the cluster, as its placement names them.', registers, async collect() {
      if (metrics.#sources) this.set(await metrics.#sources.clusterNodes().catch(() => 0));
    } });
  }

  /** Where the gauges read from; given once the node is assembled. */
  observe(sources: MetricSources): void {
    this.#sources = sources;
  }

  /** The meter of a route pattern (`/api/v1/public/meetings/:id`, never a raw path) and method; the HTTP server holds one per route. */
  route(route: string, method: string): RouteMeter {
    const key = `${method} ${route}`;
    let m = this.#routes.get(key);
    if (!m) this.#routes.set(key, (m = new RouteMeter(route, method)));
    return m;
  }

  /** A media request answered (the rooms service tells): ICE restarts and resumed media sessions are counted. */
  mediaSignal(type: string, answer: Record<string, unknown>): void {
    if (type === 'transport-restart-ice') this.#iceRestarts.inc();
    else if (type === 'media-join' && answer.resumed === true) this.#roomResumes.inc();
    else if (type === 'media-report' && typeof answer.raised === 'string') this.#mediaErrors.labels(answer.raised).inc();
  }

  /** A background job run ended: how, and how long it took. */
  jobRun(kind: string, outcome: 'succeeded' | 'retry' | 'failed', seconds: number): void {
    this.#jobRuns.labels(kind, outcome).inc();
    this.#jobSeconds.labels(kind).observe(seconds);
  }

  rateLimited(limit: string): void {
    this.#rateLimited.labels(limit).inc();
  }

  /** A delivery attempt's outcome recorded; `lagSeconds` only for a message's first attempt. */
  delivery(outcome: 'succeeded' | 'retry' | 'failed' | 'gone', lagSeconds?: number): void {
    this.#deliveries.labels(outcome).inc();
    if (lagSeconds !== undefined) this.#deliveryLag.observe(Math.max(0, lagSeconds));
  }

  actorEvent(actor: string, seconds: number): void {
    this.#actorEventSeconds.labels(actor).observe(seconds);
  }

  /** The text Prometheus scrapes. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
