import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Project } from './project.entity';

/**
 * One change of a project's `timeZone`, written with the PATCH that made it. The zone at an
 * instant x is the `fromZone` of the earliest change after x, else the project's current one:
 * calendar periods follow the zone as it was (docs/entitlements.md).
 */
@Entity({ name: 'project_time_zone_changes' })
@Index('project_time_zone_changes_project_idx', ['projectId', 'changedAt'])
export class ProjectTimeZoneChange {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id', foreignKeyConstraintName: 'project_time_zone_changes_project_fk' })
  project?: Project;

  @Column({ name: 'changed_at', type: 'timestamptz', precision: 3 })
  changedAt: Date;

  @Column({ name: 'from_zone', type: 'varchar', length: 64 })
  fromZone: string;

  @Column({ name: 'to_zone', type: 'varchar', length: 64 })
  toZone: string;
}
