import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CredentialCipher, CredentialRotation, type RotationReport } from '@lockstep/persistence';
import { UsageError } from './args';

/** Rotation left values not sealed with the current key: the previous keys must stay configured. */
export class RotationIncompleteError extends Error {
  constructor(readonly report: RotationReport) {
    super(
      `${report.remaining} stored credential(s) are still not sealed with LOCKSTEP_MASTER_KEY; keep ` +
        `LOCKSTEP_MASTER_KEY_PREVIOUS ` +
        (`set and run the command again (after reconnecting any side listed as ` +
          `unreadable).\n${JSON.stringify(report, null, 2)}`),
    );
  }
}

/**
 * `master-key rotate [--batch N]`: re-seals every stored credential under the current master key while the
 * service runs (the previous keys listed in LOCKSTEP_MASTER_KEY_PREVIOUS open the old values). Prints the
 * counts; exits non-zero while anything is left under an old key, so the operator drops the old key only
 * after a run that reports `remaining: 0`.
 */
export async function masterKeyRotate(
  app: INestApplicationContext,
  batchText: string | undefined,
): Promise<RotationReport> {
  const batch = batchText === undefined ? 100 : Number(batchText);
  if (!Number.isInteger(batch) || batch < 1 || batch > 10_000)
    throw new UsageError('--batch takes an integer from 1 to 10000');
  const report = await new CredentialRotation(app.get(DataSource), app.get(CredentialCipher)).rotate(batch);
  if (report.remaining > 0) throw new RotationIncompleteError(report);
  return report;
}
