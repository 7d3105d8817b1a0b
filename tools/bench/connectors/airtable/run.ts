/**
 * Airtable connector benchmark against the simulator with Airtable's own limits (5 requests/s per base, 50 per
 * token, 30 s after a 429): writes N records through `createRecords` (batches of 500, as the engine sends them;
 * the connector splits them into Airtable's batches of 10) into a table with the "Lockstep ID" field, then reads
 * them back through `readPage` (pages of 100). Prints records per second as a share of the documented budget
 * (writes: 5 requests/s x 10 records = 50 records/s per base; reads: 5 x 100 = 500 records/s) and the 429s
 * the simulator answered. It measures the connector, not the engine's initial sync. Not a test.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { airtableConnector } from '@lockstep/connector-airtable';
import { AirtableSimulator } from '@lockstep/connector-airtable/testing';

const TOKEN = 'patBENCHMARK.0123456789';
const WRITE_BUDGET = 50;
const READ_BUDGET = 500;

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

async function main(): Promise<void> {
  const rows = option('rows', 5000);
  const simulator = await AirtableSimulator.start();
  simulator.addToken(TOKEN);
  const base = simulator.addBase('Bench');
  const table = simulator.addTable(base, 'Rows', [
    { name: 'Title', type: 'singleLineText' },
    { name: 'Amount', type: 'number', options: { precision: 2 } },
    { name: 'Day', type: 'date', options: { dateFormat: { name: 'iso' } } },
  ]);
  const connection = await airtableConnector.connect({ apiKey: TOKEN }, base.id, {
    egress: { allowPrivate: true, allowLoopback: true },
    settings: { AIRTABLE_API_URL: simulator.url },
  });
  try {
    await connection.prepareTable(table.id, { changeCapture: true, serviceIdColumn: true });
    const [title, amount, day] = table.fields.map((field) => field.id);
    let written = 0;
    const writeStart = performance.now();
    for (let start = 0; start < rows; start += 500) {
      const batch = Array.from({ length: Math.min(500, rows - start) }, (_, n) => ({
        serviceId: randomUUID(),
        values: { [title!]: `row ${start + n}`, [amount!]: `${start + n}.25`, [day!]: '2026-11-26' },
      }));
      const results = await connection.createRecords(table.id, batch);
      written += results.filter((result) => result.ok).length;
    }
    const writeSeconds = (performance.now() - writeStart) / 1000;
    const writeLimited = simulator.stats.rateLimited;
    let read = 0;
    let after: string | null = null;
    const readStart = performance.now();
    do {
      const page = await connection.readPage(table.id, { after, pageSize: 100 });
      read += page.records.length;
      after = page.next;
    } while (after);
    const readSeconds = (performance.now() - readStart) / 1000;
    const writeRate = written / writeSeconds;
    const readRate = read / readSeconds;
    console.log(`rows ${rows}`);
    console.log(
      `write: ${written} records in ${writeSeconds.toFixed(1)} s = ${writeRate.toFixed(1)} records/s, ` +
        `${((100 * writeRate) / WRITE_BUDGET).toFixed(1)}% of ${WRITE_BUDGET}/s; 429s: ${writeLimited}`,
    );
    console.log(
      `read: ${read} records in ${readSeconds.toFixed(1)} s = ${readRate.toFixed(1)} records/s, ` +
        `${((100 * readRate) / READ_BUDGET).toFixed(1)}% of ${READ_BUDGET}/s; 429s: ${simulator.stats.rateLimited - writeLimited}`,
    );
  } finally {
    await connection.close();
    await simulator.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
