import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, numericTransformer, UpdatedAt } from '../../common/entity-columns';
import { Feature } from './feature.entity';
import { Plan } from './plan.entity';

@Entity({ name: 'quotas' })
@Index('quotas_plan_feature_uq', ['planId', 'featureId'], { unique: true })
@Index('quotas_feature_idx', ['featureId'])
export class Quota {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  /** The plan's project (and the feature's): both foreign keys include it, so neither can be another project's. */
  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'plan_id', type: 'int' })
  planId: number;

  @ManyToOne(() => Plan, (p) => p.quotas, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'plan_id', referencedColumnName: 'id', foreignKeyConstraintName: 'quotas_plan_fk' },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  plan?: Plan;

  @Column({ name: 'feature_id', type: 'int' })
  featureId: number;

  @ManyToOne(() => Feature, { onDelete: 'RESTRICT' })
  @JoinColumn([
    { name: 'feature_id', referencedColumnName: 'id', foreignKeyConstraintName: 'quotas_feature_fk' },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  feature?: Feature;

  /** null: unlimited (docs/entitlements.md#buckets). */
  @Column({
    name: 'quota_limit',
    type: 'numeric',
    precision: 20,
    scale: 4,
    nullable: true,
    transformer: numericTransformer,
  })
  limit: number | null;

  /** Higher is consumed first. */
  @Column({ type: 'int', default: 0 })
  priority: number;

  /** ISO 8601 duration; null: never resets. */
  @Column({ name: 'reset_interval', type: 'varchar', length: 32, nullable: true })
  resetInterval: string | null;

  /** `run`: periods from the run's start; `calendar`: at the start of local calendar units (docs/entitlements.md). */
  @Column({ name: 'reset_anchor', type: 'varchar', length: 8, default: 'run' })
  resetAnchor: 'run' | 'calendar';

  /** The day of the month a calendar P1M, P3M or P6M period starts on (clamped to the month's last day). */
  @Column({ name: 'reset_day_of_month', type: 'smallint', nullable: true })
  resetDayOfMonth: number | null;

  /** A calendar quota's own zone, as sent; null: the customer's, else the project's. */
  @Column({ name: 'reset_time_zone', type: 'varchar', length: 64, nullable: true })
  resetTimeZone: string | null;

  /** Percents of `limit` whose crossing is announced, ascending. */
  @Column({ type: 'smallint', array: true, default: () => "'{}'" })
  thresholds: number[];

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}
