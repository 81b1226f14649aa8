import type { Metric, Registry } from 'prom-client';

/** The labels of a request's series. */
interface SeriesLabels {
  method: string;
  route: string;
  status: string;
}

/** One series: its answers' count, the sum of their durations and how many fell in each bucket (not cumulative). */
interface Series {
  labels: SeriesLabels;
  count: number;
  sum: number;
  buckets: Float64Array;
}

/** A sample as prom-client's own metrics hand them to the registry (the series' labels as `sharedLabels` for the text form). */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels?: SeriesLabels;
  value: number;
  metricName?: string;
  /** prom-client's buckets carry `exemplar: null` when exemplars are off */
  exemplar?: null;
}

/** What the registry reads of a metric when it is scraped. */
interface Collected {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Sample[];
}

/**
 * `http_requests_total` (counter) and `http_request_duration_seconds` (histogram), by method,
 * route template and status, kept in plain numbers per series and handed to the registry in
 * prom-client's own form when it is scraped: the same text, sample for sample, as prom-client's
 * `Counter` and `Histogram`. Those validate and hash their labels on every observation (a string
 * built from the sorted label names, twice per request); here an answer costs three map lookups
 * by strings the routes already hold, two additions and a bucket's increment.
 */
export class HttpRequestMetrics {
  /** route → method → status → series */
  private readonly series = new Map<string, Map<string, Map<number, Series>>>();
  /** The series in the order of their first answer (prom-client's order). */
  private readonly ordered: Series[] = [];

  constructor(
    registry: Registry,
    private readonly names: { count: string; duration: string },
    private readonly help: { count: string; duration: string },
    private readonly bounds: readonly number[],
  ) {
    registry.registerMetric(this.counter() as unknown as Metric<string>);
    registry.registerMetric(this.histogram() as unknown as Metric<string>);
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) {
      series = {
        labels: { method, route, status: String(status) },
        count: 0,
        sum: 0,
        buckets: new Float64Array(this.bounds.length),
      };
      byStatus.set(status, series);
      this.ordered.push(series);
    }
    series.count += 1;
    series.sum += seconds;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]) {
        series.buckets[i] += 1;
        break;
      }
    }
  }

  private reset(): void {
    this.series.clear();
    this.ordered.length = 0;
  }

  private counter() {
    const { count: name } = this.names;
    const help = this.help.count;
    const base = { name, help, type: 'counter' as const, aggregator: 'sum' as const };
    const get = async (): Promise<Collected> => ({
      ...base,
      values: this.ordered.map((s) => ({ labels: { ...s.labels }, value: s.count })),
    });
    return { ...base, get, reset: () => this.reset() };
  }

  private histogram() {
    const { duration: name } = this.names;
    const help = this.help.duration;
    const base = { name, help, type: 'histogram' as const, aggregator: 'sum' as const };
    /** prom-client's order: each series' buckets (cumulative, then +Inf), its sum, its count. */
    const samples = (): Sample[] => {
      const out: Sample[] = [];
      for (const s of this.ordered) {
        let acc = 0;
        this.bounds.forEach((le, i) => {
          acc += s.buckets[i];
          out.push({
            labels: { le },
            sharedLabels: s.labels,
            value: acc,
            metricName: `${name}_bucket`,
            exemplar: null,
          });
        });
        out.push(
          {
            labels: { le: '+Inf' },
            sharedLabels: s.labels,
            value: s.count,
            metricName: `${name}_bucket`,
            exemplar: null,
          },
          { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${name}_sum` },
          { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${name}_count` },
        );
      }
      return out;
    };
    return {
      ...base,
      // the text form (Registry.metrics)
      getForPromString: async (): Promise<Collected> => ({ ...base, values: samples() }),
      // the JSON form (Registry.getMetricsAsJSON): the labels merged, as prom-client's histogram gives them
      get: async (): Promise<Collected> => ({
        ...base,
        values: samples().map(({ sharedLabels, labels, ...rest }) => ({
          ...rest,
          labels: { ...labels, ...sharedLabels },
        })),
      }),
      reset: () => this.reset(),
    };
  }
}
