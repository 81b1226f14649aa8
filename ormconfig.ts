import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './src/database/data-source-options';

/**
 * The DataSource of the TypeORM CLI (`npm run migration:run`, `migration:generate`), built by
 * the same function as the application's. Needs DATABASE_URL.
 */
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL must be set for the migration CLI');

export default new DataSource(buildDataSourceOptions({ url }));
