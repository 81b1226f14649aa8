import type { DynamicModule, Provider } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { ClsModule, ClsModuleOptions } from 'nestjs-cls';

const ENHANCERS: ReadonlySet<unknown> = new Set([APP_GUARD, APP_INTERCEPTOR]);

const isEnhancer = (provider: Provider): boolean =>
  typeof provider === 'object' && 'provide' in provider && ENHANCERS.has(provider.provide);

const isDynamicModule = (entry: unknown): entry is DynamicModule =>
  typeof entry === 'object' && entry !== null && 'module' in entry;

/**
 * `ClsModule.forRoot(options)` without the global guard and global interceptor that nestjs-cls
 * registers even when it mounts neither (each of them then does nothing). Nest runs every request
 * of a route that has any interceptor through an RxJS pipeline, so that one idle interceptor
 * would put every read through it, the cost the envelope in the adapter exists to avoid
 * (docs/benchmarks.md#the-async-context-without-idle-enhancers has the measurement that keeps
 * this). The service opens its async context in a middleware of its own, so nothing is lost.
 *
 * Throws when the options mount the guard or the interceptor, and when nestjs-cls no longer adds
 * exactly one of each: an upgrade changed how it registers them, and this must be looked at again.
 */
export function clsRootWithoutIdleEnhancers(options: ClsModuleOptions): DynamicModule {
  if (options.guard?.mount || options.interceptor?.mount)
    throw new Error('clsRootWithoutIdleEnhancers: a mounted ClsGuard or ClsInterceptor is not idle');
  let removed = 0;
  const strip = (module: DynamicModule): DynamicModule => ({
    ...module,
    providers: module.providers?.filter((provider) => {
      if (!isEnhancer(provider)) return true;
      removed++;
      return false;
    }),
    imports: module.imports?.map((entry) => (isDynamicModule(entry) ? strip(entry) : entry)),
  });
  const root = strip(ClsModule.forRoot(options));
  if (removed !== 2)
    throw new Error(
      `clsRootWithoutIdleEnhancers: nestjs-cls registered ${removed} global guards and interceptors, not 2`,
    );
  return root;
}
