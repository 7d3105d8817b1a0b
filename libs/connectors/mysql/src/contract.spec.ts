/**
 * The shared connector contract suite against the real test server (MariaDB 10.11 by default; set
 * TEST_MYSQL_URL to run it against another MySQL or MariaDB).
 */
import { runConnectorContractSuite } from '@lockstep/connectors-core/testing';
import { mysqlHarness } from './test/server';

runConnectorContractSuite(mysqlHarness());
