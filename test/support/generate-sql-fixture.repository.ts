import { Injectable } from '@nestjs/common';
import { GenerateSql } from '../../src/database/generate-sql';
import { Statement, Statements } from '../../src/database/statements';
import { Transactions } from '../../src/database/transactional';
import { Project } from '../../src/projects/entities/project.entity';

const COUNT_BY_NAME: Statement = {
  name: 'fixture.count-by-name',
  text: `SELECT count(*)::int AS n
           FROM projects
          WHERE name = $1`,
};

/**
 * A repository for the `npm run sql` test (test/generate-sql.e2e-spec.ts): one statement through
 * `pg` (`Statements`), one TypeORM query called twice, one write, one call whose params a function
 * makes and one outside a transaction, and a method left unmarked.
 */
@Injectable()
export class GenerateSqlFixtureRepository {
  constructor(
    private readonly transactions: Transactions,
    private readonly statements: Statements,
  ) {}

  @GenerateSql({ params: ['Acme'] })
  async countByName(name: string): Promise<number> {
    const [row] = await this.statements.rows<{ n: number }>(undefined, COUNT_BY_NAME, [name]);
    return row.n;
  }

  @GenerateSql({ name: 'live', params: ['prj_1', false] }, { name: 'deleted too', params: ['prj_1', true] })
  find(id: string, withDeleted: boolean): Promise<Project | null> {
    return this.transactions.tx.findOne(Project, { where: { id }, withDeleted });
  }

  @GenerateSql({ params: ['prj_generated', 'Generated'] })
  async insert(id: string, name: string): Promise<void> {
    await this.transactions.tx.query('INSERT INTO projects (id, name) VALUES ($1, $2)', [id, name]);
  }

  @GenerateSql(
    {
      name: 'params made in the transaction',
      params: async (fixture: GenerateSqlFixtureRepository) => [await fixture.countByName('Acme')],
    },
    { name: 'outside a transaction', params: [0], transaction: false },
  )
  async where(n: number): Promise<void> {
    await this.transactions.tx.query(
      this.transactions.isTransactionActive() ? 'SELECT $1::int AS inside' : 'SELECT $1::int AS outside',
      [n],
    );
  }

  async unmarked(): Promise<number> {
    return this.transactions.tx.count(Project);
  }
}
