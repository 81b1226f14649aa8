import { NestExpressApplication } from '@nestjs/platform-express';

/** The routes Express really serves, read from its router: an independent check of the info lists. */
export function expressRoutes(app: NestExpressApplication, prefix: string): string[] {
  const express = app.getHttpAdapter().getInstance() as {
    router?: { stack: Layer[] };
    _router?: { stack: Layer[] };
  };
  const out: string[] = [];
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      const route = layer.route;
      if (!route || !route.path.startsWith(prefix)) continue;
      for (const method of Object.keys(route.methods)) out.push(`${method.toUpperCase()} ${route.path}`);
    }
  };
  walk((express.router ?? express._router)!.stack);
  return out.sort();
}

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
}
