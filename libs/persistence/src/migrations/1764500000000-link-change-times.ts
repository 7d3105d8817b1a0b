import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `record_links.left_changed_at` / `right_changed_at`: when a side's change was seen while the other side has not
 * taken it yet: the write carrying it was refused (a record issue) or found the target edited under it, a value
 * could not be converted, or a relation's target was not there yet.
 * The side's shadow keeps its old values then, so the change is merged again later, and possibly against a newer
 * edit on the other side; "the later change wins" needs the time this change was made, not the time it is read
 * again. Null when the side has nothing pending. Both are nullable without a default: adding them rewrites nothing.
 */
export class LinkChangeTimes1764500000000 implements MigrationInterface {
  name = 'LinkChangeTimes1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE record_links ADD COLUMN left_changed_at timestamptz, ADD COLUMN right_changed_at timestamptz`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE record_links DROP COLUMN left_changed_at, DROP COLUMN right_changed_at`);
  }
}
