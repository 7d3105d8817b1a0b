import { DataSource, type DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';

/** Options for the service store. Never `synchronize`: the schema only changes through migrations. */
export function dataSourceOptions(
  url: string,
  overrides: Partial<DataSourceOptions> = {},
): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'all',
    synchronize: false,
    logging: false,
    extra: { max: 10, application_name: 'lockstep' },
    ...overrides,
  } as DataSourceOptions;
}

export function createDataSource(url: string): DataSource {
  return new DataSource(dataSourceOptions(url));
}
