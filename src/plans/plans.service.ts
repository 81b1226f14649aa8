import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '../common/errors/domain-error';
import { Plan } from './entities/plan.entity';

@Injectable()
export class PlansService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** One plan of the project, or PLAN_NOT_FOUND (a plan of another project is not found). */
  async getPlanEntity(projectId: string, planId: number, manager: EntityManager = this.dataSource.manager): Promise<Plan> {
    const plan = await manager.findOne(Plan, { where: { id: planId, projectId } });
    if (!plan) throw new DomainError('PLAN_NOT_FOUND');
    return plan;
  }

  /** The project's free plans (value 0), in order of id: what sign-up grants (product.md 6). */
  listFreePlans(projectId: string, manager: EntityManager = this.dataSource.manager): Promise<Plan[]> {
    return manager.find(Plan, { where: { projectId, value: 0 }, order: { id: 'ASC' } });
  }
}
