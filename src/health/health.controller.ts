import { ApiErrors } from '../common/swagger/api-responses';
import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckResult,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Unauthenticated } from '../common/routes/access';
import { DomainError } from '../common/errors/domain-error';

/** What each readiness check means when it fails, named in the 503's `details` (no driver message: the probe needs no key). */
const FAILURE: Record<string, string> = {
  database: 'the database does not answer',
  migrations: 'a migration is pending',
};

/** Probes for Kubernetes: outside the API prefixes, no keys. */
@ApiTags('Health')
@Unauthenticated()
@Controller()
export class HealthController {
  private migrationsApplied = false;

  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  @Get('healthz')
  @ApiOperation({ summary: 'Liveness: the process answers' })
  live() {
    return { status: 'ok' };
  }

  @Get('readyz')
  @ApiErrors('SERVICE_UNAVAILABLE') // above @HealthCheck(): terminus's own 503 is not the error envelope
  @HealthCheck()
  @ApiOperation({ summary: 'Readiness: the database answers and every migration is applied (503 otherwise)' })
  async ready(): Promise<Pick<HealthCheckResult, 'status' | 'info'>> {
    try {
      const { status, info } = await this.health.check([
        () => this.db.pingCheck('database', { timeout: 2000 }),
        () => this.migrations(),
      ]);
      // terminus also sends `error: {}` and `details` (info again): only what a reader needs
      return { status, info };
    } catch (error) {
      // terminus's 503 carries its own body; answer the error envelope instead, naming the failed checks
      const result =
        error instanceof ServiceUnavailableException ? (error.getResponse() as HealthCheckResult) : undefined;
      const failed = Object.keys(result?.error ?? {});
      if (failed.length === 0) throw error;
      throw new DomainError(
        'SERVICE_UNAVAILABLE',
        `Not ready: ${failed.map((name) => FAILURE[name] ?? `${name} is down`).join('; ')}.`,
        failed.map((name) => ({ field: name, message: FAILURE[name] ?? 'down' })),
      );
    }
  }

  private async migrations() {
    const indicator = this.indicators.check('migrations');
    // Once all are applied they stay applied for this process; skip the query from then on.
    if (!this.migrationsApplied) this.migrationsApplied = !(await this.dataSource.showMigrations());
    return this.migrationsApplied ? indicator.up() : indicator.down({ pending: true });
  }
}
