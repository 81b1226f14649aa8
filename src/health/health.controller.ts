import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Unauthenticated } from '../common/routes/access';

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
  @HealthCheck()
  @ApiOperation({ summary: 'Readiness: the database answers and every migration is applied (503 otherwise)' })
  ready() {
    return this.health.check([
      () => this.db.pingCheck('database', { timeout: 2000 }),
      () => this.migrations(),
    ]);
  }

  private async migrations() {
    const indicator = this.indicators.check('migrations');
    // Once all are applied they stay applied for this process; skip the query from then on.
    if (!this.migrationsApplied) this.migrationsApplied = !(await this.dataSource.showMigrations());
    return this.migrationsApplied ? indicator.up() : indicator.down({ pending: true });
  }
}
