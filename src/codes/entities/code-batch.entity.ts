import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Plan } from '../../plans/entities/plan.entity';
import { CreatedAt } from '../../common/entity-columns';

@Entity({ name: 'code_batches' })
@Index('code_batches_project_idx', ['projectId'])
export class CodeBatch {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'plan_id', type: 'int' })
  planId: number;

  @ManyToOne(() => Plan, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'plan_id', foreignKeyConstraintName: 'code_batches_plan_fk' })
  plan?: Plan;

  @Column({ type: 'varchar', length: 32, nullable: true })
  duration: string | null;

  @Column({ type: 'int' })
  count: number;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  note: string | null;

  @CreatedAt()
  createdAt: Date;
}
