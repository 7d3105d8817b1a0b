/**
 * What an app adds to the contract: read-only fields, record links, attachments, a 429 storm, an expired
 * access token, the egress policy on the base URL, and the idempotent create after a timeout, against the
 * simulator with Airtable's own limits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { connectAirtable } from './connect';
import { TOKEN, useConnector } from './test/kit';
import { ACCESS_TOKEN_LIFETIME_MS } from './testing/simulator-oauth';

const at = useConnector({ penaltyMs: 1500 });

describe('Airtable field kinds', () => {
  it('lists computed fields read-only: a write to one is refused for that record only, naming the field', async () => {
    const sim = at.simulator.addTable(at.base, 'Computed', [{ name: 'Title', type: 'singleLineText' }]);
    sim.fields.push({ id: 'fldAUTONUMBER0000', name: 'Number', type: 'autoNumber' });
    const connection = await at.connect();
    const results = await connection.createRecords(sim.id, [
      { serviceId: randomUUID(), values: { Title: 'a' } },
      { serviceId: randomUUID(), values: { Title: 'b', Number: 7 } },
    ]);
    expect(results[0]).toMatchObject({ ok: true, record: { values: { fldAUTONUMBER0000: 1 } } });
    expect(results[1]).toMatchObject({
      ok: false,
      error: { kind: 'invalid_data', message: expect.stringContaining('Field "Number"') },
    });
    expect(sim.records.size).toBe(1);
  });

  it('writes and reads record links by record id; a link to a missing record is refused on its own', async () => {
    const people = at.simulator.addTable(at.base, 'People', [{ name: 'Name', type: 'singleLineText' }]);
    const deals = at.simulator.addTable(at.base, 'Linked deals', [
      { name: 'Title', type: 'singleLineText' },
      { name: 'Owners', type: 'multipleRecordLinks', options: { linkedTableId: people.id } },
    ]);
    const ann = at.simulator.outside.insert(at.base, people.id, { Name: 'Ann' });
    const bob = at.simulator.outside.insert(at.base, people.id, { Name: 'Bob' });
    const connection = await at.connect();
    const owners = deals.fields[1]!.id;
    const fields = await connection.listFields(deals.id);
    expect(fields.find((field) => field.remoteId === owners)).toMatchObject({
      typeClass: 'relation',
      typeDetails: { target_table: people.id, allows_multiple_values: true },
    });
    const [linked, broken] = await connection.createRecords(deals.id, [
      { serviceId: randomUUID(), values: { Title: 'big', [owners]: [ann, bob] } },
      { serviceId: randomUUID(), values: { Title: 'bad', [owners]: ['recNOSUCHRECORD00'] } },
    ]);
    expect(broken).toMatchObject({
      ok: false,
      error: { kind: 'invalid_data', appCode: 'ROW_DOES_NOT_EXIST' },
    });
    const [read] = await connection.readByIds(deals.id, [linked!.ok ? linked!.remoteId : '']);
    expect(read!.values[owners]).toEqual([ann, bob]);
  });

  it('writes attachments as JSON objects and reads them as { url, filename, size, type }', async () => {
    const sim = at.simulator.addTable(at.base, 'Files', [
      { name: 'Title', type: 'singleLineText' },
      { name: 'Files', type: 'multipleAttachments' },
    ]);
    const connection = await at.connect();
    const file = { url: 'https://files.example.com/report.pdf', filename: 'report.pdf' };
    const [created] = await connection.createRecords(sim.id, [
      {
        serviceId: randomUUID(),
        values: { Title: 't', Files: [{ ...file, size: 10, type: 'application/pdf' }] },
      },
    ]);
    expect(created).toMatchObject({
      ok: true,
      record: { values: { [sim.fields[1]!.id]: [{ ...file, size: 0, type: 'application/octet-stream' }] } },
    });
    // What Airtable was sent: only the url and the file name (it fetches the file itself).
    expect([...sim.records.values()][0]!.fields[sim.fields[1]!.id]).toEqual([
      expect.objectContaining({ url: file.url, filename: file.filename }),
    ]);
    const [refused] = await connection.createRecords(sim.id, [
      { serviceId: randomUUID(), values: { Files: [{ filename: 'no url' }] } },
    ]);
    expect(refused).toMatchObject({ ok: false, error: { message: expect.stringContaining('needs a url') } });
  });
});

describe('tokens and the base URL', () => {
  it('an access token that expired is kind auth', async () => {
    const tokens = at.simulator.signIn('lockstep-client');
    const connection = await at.connect(null, tokens.access_token);
    await connection.checkCredentials();
    at.simulator.advanceClock(ACCESS_TOKEN_LIFETIME_MS + 1000);
    await expect(connection.checkCredentials()).rejects.toMatchObject({
      kind: 'auth',
      appCode: 'AUTHENTICATION_REQUIRED',
    });
  });

  it('applies the egress policy to AIRTABLE_API_URL, and an unreachable one is transient', async () => {
    for (const url of ['http://169.254.169.254', 'http://metadata.google.internal']) {
      const connection = await at.connect(null, TOKEN, { settings: { AIRTABLE_API_URL: url } });
      await expect(connection.checkCredentials()).rejects.toMatchObject({ kind: 'permission' });
    }
    const closed = await at.connect(null, TOKEN, { settings: { AIRTABLE_API_URL: 'http://127.0.0.1:1' } });
    const error = await closed.checkCredentials().catch((caught: Error) => caught);
    expect(error).toMatchObject({ kind: 'transient' });
    expect((error as Error).message).not.toContain(TOKEN);
  });
});

describe('rate limits', () => {
  it('a 429 storm: every create lands once, and the budget keeps the limits afterwards', async () => {
    const sim = at.simulator.addTable(at.base, 'Storm', [{ name: 'Title', type: 'singleLineText' }]);
    const connection = await at.connect();
    await connection.prepareTable(sim.id, { changeCapture: false });
    // Someone else with the same token floods the base: Airtable answers 429 to everyone for the penalty.
    const flood = await Promise.all(
      Array.from({ length: 12 }, () =>
        fetch(`${at.simulator.url}/v0/${at.base.id}/${sim.id}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        }),
      ),
    );
    const floodLimited = flood.filter((response) => response.status === 429).length;
    expect(floodLimited).toBeGreaterThan(0);
    const before = at.simulator.stats.rateLimited;
    const rows = Array.from({ length: 30 }, (_, n) => ({
      serviceId: randomUUID(),
      values: { Title: `r${n}` },
    }));
    const results = await connection.createRecords(sim.id, rows);
    expect(results.every((result) => result.ok)).toBe(true);
    expect(sim.records.size).toBe(30);
    // At most the one 429 that told the connector about the pause; none once it kept to its budget.
    expect(at.simulator.stats.rateLimited - before).toBeLessThanOrEqual(1);
    const after = at.simulator.stats.rateLimited;
    await connection.readPage(sim.id, { pageSize: 100 });
    await connection.countRecords!(sim.id);
    expect(at.simulator.stats.rateLimited).toBe(after);
  }, 90_000);
});

describe('idempotent creates', () => {
  it('a create whose answer never arrived is sent again and adopts the record it wrote', async () => {
    const sim = at.simulator.addTable(at.base, 'Timeouts', [{ name: 'Title', type: 'singleLineText' }]);
    // A proxy that lets the first create through to Airtable but holds its answer past the client's deadline.
    let held = 0;
    const proxy = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const forward = http.request(
          `${at.simulator.url}${req.url}`,
          { method: req.method, headers: req.headers },
          (answer) => {
            const body: Buffer[] = [];
            answer.on('data', (chunk: Buffer) => body.push(chunk));
            answer.on('end', () => {
              const reply = () => res.writeHead(answer.statusCode!, answer.headers).end(Buffer.concat(body));
              if (req.method === 'PATCH' && held++ === 0) setTimeout(reply, 1500);
              else reply();
            });
          },
        );
        forward.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const context = { ...at.context, settings: { AIRTABLE_API_URL: url } };
      const connection = await connectAirtable({ apiKey: TOKEN }, at.base.id, context, { timeoutMs: 700 });
      await connection.prepareTable(sim.id, { changeCapture: false });
      const serviceId = randomUUID();
      const [result] = await connection.createRecords(sim.id, [{ serviceId, values: { Title: 'once' } }]);
      expect(held).toBe(2);
      expect(sim.records.size).toBe(1);
      const [record] = [...sim.records.values()];
      expect(result).toMatchObject({ ok: true, remoteId: record!.id, record: { serviceId } });
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
