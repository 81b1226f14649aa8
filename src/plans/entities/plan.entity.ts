import { Column, Entity, Index, OneToMany, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, numericTransformer, UpdatedAt } from '../../common/entity-columns';
import { Quota } from './quota.entity';

@Entity({ name: 'plans' })
@Index('plans_project_slug_uq', ['projectId', 'slug'], { unique: true })
@Index('plans_project_group_idx', ['projectId', 'group'])
// the target of the quotas' foreign key (plan_id, project_id): a quota's plan is of the quota's project
@Index('plans_project_id_uq', ['projectId', 'id'], { unique: true })
export class Plan {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'varchar', length: 64 })
  slug: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  /** Face value, two decimals at most; 0 means a free plan. Immutable once created. */
  @Column({ type: 'numeric', precision: 14, scale: 2, transformer: numericTransformer })
  value: number;

  /** Plans of one group form one renewal chain. Immutable once created. */
  @Column({ name: 'plan_group', type: 'varchar', length: 64 })
  group: string;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;

  @OneToMany(() => Quota, (q) => q.plan)
  quotas?: Quota[];
}
