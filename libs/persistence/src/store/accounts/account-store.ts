/** Accounts (`accounts`) as the features gated by plan read them. */
import type { EntityManager } from 'typeorm';

export interface AccountPlan {
  plan: string;
  subscription: string;
}

const PLAN_SQL = `
  SELECT plan, subscription FROM accounts WHERE id = $1`;

export class AccountStore {
  /** `db`: the data source's manager, or a transaction's. */
  constructor(private readonly db: EntityManager) {}

  /** The account's plan and subscription state; null for an unknown account. */
  async plan(accountId: string): Promise<AccountPlan | null> {
    const rows: AccountPlan[] = await this.db.query(PLAN_SQL, [accountId]);
    return rows[0] ?? null;
  }
}
