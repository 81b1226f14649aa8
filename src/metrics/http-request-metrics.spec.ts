import { Counter, Histogram, Registry } from 'prom-client';
import { HttpRequestMetrics } from './http-request-metrics';

const NAMES = { count: 'http_requests_total', duration: 'http_request_duration_seconds' };
const HELP = { count: 'Requests.', duration: 'Durations.' };
const BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The same answers counted by prom-client's own Counter and Histogram: the oracle. */
function promClient() {
  const registry = new Registry();
  const labelNames = ['method', 'route', 'status'] as const;
  const counter = new Counter({ name: NAMES.count, help: HELP.count, labelNames, registers: [registry] });
  const histogram = new Histogram({
    name: NAMES.duration,
    help: HELP.duration,
    labelNames,
    buckets: BOUNDS,
    registers: [registry],
  });
  const observe = (method: string, route: string, status: number, seconds: number) => {
    const labels = { method, route, status: String(status) };
    counter.inc(labels);
    histogram.observe(labels, seconds);
  };
  return { registry, observe };
}

function ours() {
  const registry = new Registry();
  const metrics = new HttpRequestMetrics(registry, NAMES, HELP, BOUNDS);
  return { registry, observe: metrics.observe.bind(metrics) };
}

const ANSWERS: Array<[string, string, number, number]> = [
  ['GET', '/api/private/v1/customers/:customerId', 200, 0.004],
  ['GET', '/api/private/v1/customers/:customerId', 200, 0.005],
  ['GET', '/api/private/v1/customers/:customerId', 404, 0.012],
  ['POST', '/api/private/v1/redemptions', 200, 0.3],
  ['GET', '/api/private/v1/customers/:customerId', 200, 12],
  ['GET', 'unmatched', 404, 0.0001],
  ['POST', '/api/private/v1/redemptions', 409, 1],
  ['GET', '/api/private/v1/customers/:customerId', 200, 0.07],
];

describe('HttpRequestMetrics', () => {
  it('scrapes to the same text and JSON as prom-client’s Counter and Histogram', async () => {
    const oracle = promClient();
    const tested = ours();
    // nothing observed yet: the same headers
    expect(await tested.registry.metrics()).toBe(await oracle.registry.metrics());
    for (const answer of ANSWERS) {
      oracle.observe(...answer);
      tested.observe(...answer);
    }
    const text = await tested.registry.metrics();
    expect(text).toBe(await oracle.registry.metrics());
    expect(text).toContain(
      'http_request_duration_seconds_bucket{le="0.005",method="GET",route="/api/private/v1/customers/:customerId",status="200"} 2',
    );
    expect(text).toContain(
      'http_requests_total{method="GET",route="/api/private/v1/customers/:customerId",status="200"} 4',
    );
    expect(await tested.registry.getMetricsAsJSON()).toEqual(await oracle.registry.getMetricsAsJSON());
  });

  it('forgets every series on a reset of the registry, as prom-client does', async () => {
    const oracle = promClient();
    const tested = ours();
    for (const answer of ANSWERS) {
      oracle.observe(...answer);
      tested.observe(...answer);
    }
    oracle.registry.resetMetrics();
    tested.registry.resetMetrics();
    expect(await tested.registry.metrics()).toBe(await oracle.registry.metrics());
  });
});
