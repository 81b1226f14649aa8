import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';

@Entity({ name: 'features' })
@Index('features_project_slug_uq', ['projectId', 'slug'], { unique: true })
// the target of the quotas' foreign key (feature_id, project_id): a quota's feature is of the quota's project
@Index('features_project_id_uq', ['projectId', 'id'], { unique: true })
export class Feature {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'varchar', length: 64 })
  slug: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 2000, default: '' })
  description: string;

  @Column({ type: 'boolean', default: false })
  metered: boolean;

  @Column({ type: 'varchar', length: 32, default: '' })
  unit: string;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}
