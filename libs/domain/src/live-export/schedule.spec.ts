import {
  dueSlot,
  isTimeOfDay,
  isTimeZone,
  nextSlot,
  previousSlot,
  type LiveExportScheduleSpec,
} from './schedule';

const every = (cadence: LiveExportScheduleSpec['cadence']): LiveExportScheduleSpec => ({
  cadence,
  enabled: true,
  timeOfDay: null,
  timezone: null,
});
const dailyAt = (timeOfDay: string, timezone: string): LiveExportScheduleSpec => ({
  cadence: 'daily',
  enabled: true,
  timeOfDay,
  timezone,
});
const at = (iso: string) => new Date(iso);
const iso = (date: Date | null) => date?.toISOString() ?? null;

describe('live export schedule slots', () => {
  it.each([
    ['every_10_minutes', '2025-05-05T12:03:10.000Z', '2025-05-05T12:10:00.000Z', '2025-05-05T12:00:00.000Z'],
    ['every_10_minutes', '2025-05-05T12:10:00.000Z', '2025-05-05T12:20:00.000Z', '2025-05-05T12:10:00.000Z'],
    ['every_30_minutes', '2025-05-05T12:29:59.999Z', '2025-05-05T12:30:00.000Z', '2025-05-05T12:00:00.000Z'],
    ['hourly', '2025-05-05T23:59:00.000Z', '2025-05-06T00:00:00.000Z', '2025-05-05T23:00:00.000Z'],
  ] as const)('%s after %s is %s (previous %s), on UTC boundaries', (cadence, now, next, previous) => {
    expect(iso(nextSlot(every(cadence), at(now)))).toBe(next);
    expect(iso(previousSlot(every(cadence), at(now)))).toBe(previous);
  });

  it('has no slots when manual or disabled', () => {
    expect(nextSlot(every('manual'), at('2025-05-05T12:00:00Z'))).toBeNull();
    expect(nextSlot({ ...every('hourly'), enabled: false }, at('2025-05-05T12:00:00Z'))).toBeNull();
    expect(
      dueSlot({ ...dailyAt('09:00', 'UTC'), enabled: false }, null, at('2025-05-05T12:00:00Z')),
    ).toBeNull();
  });

  it.each([
    ['09:00', 'Europe/Berlin', '2025-06-01T05:00:00Z', '2025-06-01T07:00:00.000Z'],
    ['09:00', 'Europe/Berlin', '2025-06-01T07:00:00Z', '2025-06-02T07:00:00.000Z'],
    ['09:00', 'Europe/Berlin', '2025-01-15T08:30:00Z', '2025-01-16T08:00:00.000Z'],
    ['00:00', 'Asia/Tokyo', '2025-06-01T14:59:00Z', '2025-06-01T15:00:00.000Z'],
    ['23:30', 'America/Los_Angeles', '2025-06-01T00:00:00Z', '2025-06-01T06:30:00.000Z'],
    ['05:45', 'Asia/Kathmandu', '2025-05-31T23:59:00Z', '2025-06-01T00:00:00.000Z'],
  ])('daily at %s in %s after %s is %s', (time, zone, now, next) => {
    expect(iso(nextSlot(dailyAt(time, zone), at(now)))).toBe(next);
  });

  describe('spring forward (the time does not exist that day)', () => {
    it('runs at the first valid instant after the gap: Europe/Berlin 02:30 on 2025-03-30 runs at 03:00 CEST', () => {
      const schedule = dailyAt('02:30', 'Europe/Berlin');
      const slot = nextSlot(schedule, at('2025-03-29T23:00:00Z'));
      expect(iso(slot)).toBe('2025-03-30T01:00:00.000Z'); // 03:00 CEST, the moment clocks jump
      expect(iso(nextSlot(schedule, slot!))).toBe('2025-03-31T00:30:00.000Z'); // 02:30 CEST the next day
      expect(iso(nextSlot(schedule, at('2025-03-29T00:00:00Z')))).toBe('2025-03-29T01:30:00.000Z'); // 02:30 CET the day before
    });

    it('America/New_York 02:15 on 2025-03-09 runs at 03:00 EDT', () => {
      expect(iso(nextSlot(dailyAt('02:15', 'America/New_York'), at('2025-03-09T00:00:00Z')))).toBe(
        '2025-03-09T07:00:00.000Z',
      );
    });

    it('a time outside the gap is unaffected that day', () => {
      expect(iso(nextSlot(dailyAt('03:30', 'Europe/Berlin'), at('2025-03-29T23:00:00Z')))).toBe(
        '2025-03-30T01:30:00.000Z',
      );
      expect(iso(nextSlot(dailyAt('01:59', 'Europe/Berlin'), at('2025-03-29T23:00:00Z')))).toBe(
        '2025-03-30T00:59:00.000Z',
      );
    });
  });

  describe('fall back (the time happens twice that day)', () => {
    it('runs once, at the first occurrence: Europe/Berlin 02:30 on 2025-10-26 runs at 02:30 CEST only', () => {
      const schedule = dailyAt('02:30', 'Europe/Berlin');
      const first = nextSlot(schedule, at('2025-10-25T23:00:00Z'));
      expect(iso(first)).toBe('2025-10-26T00:30:00.000Z'); // 02:30 CEST
      // The second 02:30 (CET, 01:30Z) is not a slot: the next one is the following day.
      expect(iso(nextSlot(schedule, first!))).toBe('2025-10-27T01:30:00.000Z');
      expect(dueSlot(schedule, first, at('2025-10-26T01:45:00Z'))).toBeNull();
      expect(iso(previousSlot(schedule, at('2025-10-26T01:45:00Z')))).toBe('2025-10-26T00:30:00.000Z');
    });

    it('America/New_York 01:30 on 2025-11-02 runs at 01:30 EDT only', () => {
      const schedule = dailyAt('01:30', 'America/New_York');
      const first = nextSlot(schedule, at('2025-11-02T00:00:00Z'));
      expect(iso(first)).toBe('2025-11-02T05:30:00.000Z');
      expect(iso(nextSlot(schedule, first!))).toBe('2025-11-03T06:30:00.000Z');
    });
  });

  it('gives exactly one daily slot per local day over a whole year, in order, across both DST changes', () => {
    for (const [time, zone] of [
      ['02:30', 'Europe/Berlin'],
      ['02:00', 'America/New_York'],
      ['00:00', 'America/Santiago'],
      ['12:00', 'Australia/Sydney'],
    ] as const) {
      const schedule = dailyAt(time, zone);
      let cursor = at('2025-01-01T00:00:00Z');
      const days = new Set<string>();
      for (let i = 0; i < 365; i += 1) {
        const slot = nextSlot(schedule, cursor)!;
        expect(slot.getTime()).toBeGreaterThan(cursor.getTime());
        expect(iso(previousSlot(schedule, slot))).toBe(iso(slot));
        days.add(
          new Intl.DateTimeFormat('en-CA', {
            timeZone: zone,
            year: 'numeric',
            month: '2-digit',
            day: '2-digit',
          }).format(slot),
        );
        cursor = slot;
      }
      expect(days.size).toBe(365);
    }
  });

  describe('dueSlot', () => {
    const schedule = every('every_10_minutes');
    it('is the latest passed slot later than the last one handled', () => {
      expect(iso(dueSlot(schedule, at('2025-05-05T12:00:00Z'), at('2025-05-05T12:10:00.500Z')))).toBe(
        '2025-05-05T12:10:00.000Z',
      );
      expect(dueSlot(schedule, at('2025-05-05T12:10:00Z'), at('2025-05-05T12:19:59Z'))).toBeNull();
    });
    it('collapses missed slots into the latest one', () => {
      expect(iso(dueSlot(schedule, at('2025-05-05T08:00:00Z'), at('2025-05-05T12:34:00Z')))).toBe(
        '2025-05-05T12:30:00.000Z',
      );
    });
    it('with nothing handled yet, is the latest passed slot', () => {
      expect(iso(dueSlot(schedule, null, at('2025-05-05T12:34:00Z')))).toBe('2025-05-05T12:30:00.000Z');
    });
  });

  it('validates time_of_day and time zones', () => {
    expect(['00:00', '23:59', '09:05'].every(isTimeOfDay)).toBe(true);
    expect(['24:00', '9:05', '12:60', '', null].some(isTimeOfDay)).toBe(false);
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(() => nextSlot(dailyAt('25:00', 'UTC'), new Date())).toThrow(/time_of_day/);
  });
});
