import { loadConfig } from '@lockstep/config';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { CursorService } from './cursor.service';

const masterKey = (byte: number) => Buffer.alloc(32, byte).toString('base64');
const service = (byte: number, previous: number[] = []) =>
  new CursorService(
    loadConfig(
      {},
      {
        LOCKSTEP_MASTER_KEY: masterKey(byte),
        LOCKSTEP_MASTER_KEY_PREVIOUS: previous.map(masterKey).join(','),
        DATABASE_URL: 'postgres://x@127.0.0.1/x',
      },
    ),
  );
const position = { createdAt: '2026-11-26T06:00:00.000Z', id: 'sync_1' };

describe('CursorService across a master key rotation', () => {
  const before = service(1);
  const rotating = service(2, [1]);
  const after = service(2);

  it('accepts a cursor the previous key signed while that key is listed as previous', () => {
    expect(rotating.decode(before.encode('syncs', 'acc_1', position), 'syncs', 'acc_1')).toEqual(position);
  });

  it('signs with the current key only', () => {
    expect(after.decode(rotating.encode('syncs', 'acc_1', position), 'syncs', 'acc_1')).toEqual(position);
  });

  it('refuses a cursor of a key no longer configured as invalid_cursor', () => {
    const cursor = before.encode('syncs', 'acc_1', position);
    expect(() => after.decode(cursor, 'syncs', 'acc_1')).toThrow(DomainError);
    expect(() => after.decode(cursor, 'syncs', 'acc_1')).toThrow(
      expect.objectContaining({ code: ErrorCode.InvalidCursor }),
    );
  });
});
