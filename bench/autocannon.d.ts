/** The part of autocannon's programmatic API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request | null | undefined;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      amount?: number;
      timeout?: number;
      pipelining?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      requests?: Request[];
      title?: string;
    }
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
      p99_9: number;
    }
    interface Result {
      title?: string;
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
      latency: Histogram;
      requests: Histogram & { sent: number };
      statusCodeStats: Record<string, { count: number }>;
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result> & { stop(): void };
  export = autocannon;
}
