import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An issue is a failure, not one occurrence of it: a failure seen again counts on its issue and reopens it when
 * resolved (`raiseIssues`), so an agent that retried an issue sees that same id open again when the retry did
 * not fix the cause. `sync_issues_dedupe` finds a failure's issues, resolved ones included (the partial unique
 * index `sync_issues_open_dedupe` holds only the open one).
 */
export class IssueRecurrence1764600000000 implements MigrationInterface {
  name = 'IssueRecurrence1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX sync_issues_dedupe ON sync_issues (sync_id, dedupe_key, first_seen_at DESC, id DESC)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sync_issues_dedupe`);
  }
}
