import { Foundation1763700000000 } from './1763700000000-foundation';
import { SyncResources1763800000000 } from './1763800000000-sync-resources';
import { Engine1763900000000 } from './1763900000000-engine';
import { RecordSearch1764000000200 } from './1764000000200-record-search';
import { Monitoring1764100000000 } from './1764100000000-monitoring';

/** Every migration, oldest first. Add new ones at the end. */
export const MIGRATIONS = [Foundation1763700000000, SyncResources1763800000000, Engine1763900000000, RecordSearch1764000000200, Monitoring1764100000000];
