import type { Direction } from '../mappings/directions';
import type { RecordDeleteBehavior } from '../mappings/document';
import type { SideName } from '../mappings/schema';
import { type DeleteApprovalMode, type DeleteDecision, decideDelete } from './deletes';

// Engine design section 5. Rows: the side the record went missing on and the table direction. Columns: the
// other side's record_delete_behavior / the sync's delete_approval / whether a person ignored the held delete.
//   D = delete the other side's copy, H = hold (pending delete), Z = dormant (ignored), U = unlink (do_nothing),
//   M = mark the missing copy deleted, dead (the direction does not carry deletes this way).
// prettier-ignore
const MATRIX: Record<`${SideName} ${Direction}`, string> = {
  //                     sync/review  sync/review  sync/auto  sync/auto  keep/review  keep/review  keep/auto  keep/auto
  //                     not ignored  ignored      not ign.   ignored    not ignored  ignored      not ign.   ignored
  'left two_way':        'H           Z            D          Z          U            U            U          U',
  'left left_to_right':  'H           Z            D          Z          U            U            U          U',
  'left right_to_left':  'M           M            M          M          M            M            M          M',
  'right two_way':       'H           Z            D          Z          U            U            U          U',
  'right left_to_right': 'M           M            M          M          M            M            M          M',
  'right right_to_left': 'H           Z            D          Z          U            U            U          U',
};

const COLUMNS: [RecordDeleteBehavior, DeleteApprovalMode, boolean][] = [
  ['sync', 'review_required', false],
  ['sync', 'review_required', true],
  ['sync', 'auto_approve', false],
  ['sync', 'auto_approve', true],
  ['do_nothing', 'review_required', false],
  ['do_nothing', 'review_required', true],
  ['do_nothing', 'auto_approve', false],
  ['do_nothing', 'auto_approve', true],
];

const decision = (mark: string, missingSide: SideName): DeleteDecision => {
  switch (mark) {
    case 'D':
      return { action: 'delete', side: missingSide === 'left' ? 'right' : 'left' };
    case 'H':
      return { action: 'hold' };
    case 'Z':
      return { action: 'dormant' };
    case 'U':
      return { action: 'unlink' };
    case 'M':
      return { action: 'mark_deleted', dead: true };
    default:
      throw new Error(`unknown mark ${mark}`);
  }
};

const cases = Object.entries(MATRIX).flatMap(([row, marks]) => {
  const [missingSide, tableDirection] = row.split(' ') as [SideName, Direction];
  return marks
    .split(/\s+/)
    .map(
      (mark, index) => [missingSide, tableDirection, ...COLUMNS[index], decision(mark, missingSide)] as const,
    );
});

describe('decideDelete (engine design 5)', () => {
  it('covers every side, direction, behavior, approval and ignored combination once', () => {
    expect(cases).toHaveLength(2 * 3 * 2 * 2 * 2);
  });

  it.each(cases)(
    '%s missing, %s table, other side %s, %s, ignored %s',
    (missingSide, tableDirection, otherDeleteBehavior, deleteApproval, ignored, expected) => {
      expect(
        decideDelete({
          missingSide,
          otherHasCopy: true,
          tableDirection,
          otherDeleteBehavior,
          deleteApproval,
          ignored,
        }),
      ).toEqual(expected);
    },
  );

  it.each(cases)(
    '%s missing, %s table, other side %s, %s, ignored %s: nothing left on the other side is forgotten',
    (missingSide, tableDirection, otherDeleteBehavior, deleteApproval, ignored) => {
      expect(
        decideDelete({
          missingSide,
          otherHasCopy: false,
          tableDirection,
          otherDeleteBehavior,
          deleteApproval,
          ignored,
        }),
      ).toEqual({
        action: 'forget',
      });
    },
  );

  it.each([
    ['left', 'review_required', { action: 'hold' }],
    ['right', 'review_required', { action: 'hold' }],
    ['left', 'auto_approve', { action: 'delete', side: 'right' }],
    ['right', 'auto_approve', { action: 'delete', side: 'left' }],
  ] as const)(
    '%s missing, %s, ignored omitted: treated as not ignored',
    (missingSide, deleteApproval, expected) => {
      expect(
        decideDelete({
          missingSide,
          otherHasCopy: true,
          tableDirection: 'two_way',
          otherDeleteBehavior: 'sync',
          deleteApproval,
        }),
      ).toEqual(expected);
    },
  );
});
