/**
 * When a live export's schedule runs (spec 2.15). Pure: the worker's tick and the API's `next_run_at` both
 * call these with the time they consider "now".
 *
 * - `every_10_minutes`, `every_30_minutes`, `hourly`: slots are UTC wall-clock boundaries (:00, :10, ... /
 *   :00, :30 / :00), whatever the schedule's time zone.
 * - `daily`: once a day at `time_of_day` ("HH:MM") in the IANA `timezone`. On the day clocks spring forward
 *   over that time (it does not exist), the slot is the first valid instant after the gap (the moment of the
 *   change: 02:30 in a 02:00 -> 03:00 gap runs at 03:00). On the day clocks fall back over it (it happens
 *   twice), the slot is the first occurrence only, so a daily schedule runs once that day.
 * - `manual`, or `enabled: false`: no slots.
 *
 * `dueSlot` collapses missed slots: after a pause (worker down, schedule just enabled) only the latest slot
 * that has passed runs, never a backlog.
 */
import { IANAZone } from 'luxon';
import type { LiveExportCadence } from './availability';

export interface LiveExportScheduleSpec {
  cadence: LiveExportCadence;
  enabled: boolean;
  /** "HH:MM", daily only. */
  timeOfDay: string | null;
  /** IANA time zone, daily only. */
  timezone: string | null;
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const INTERVALS: Partial<Record<LiveExportCadence, number>> = {
  every_10_minutes: 10 * MINUTE,
  every_30_minutes: 30 * MINUTE,
  hourly: 60 * MINUTE,
};

const TIME_OF_DAY = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** Whether `value` is a valid `time_of_day` ("HH:MM", 00:00 to 23:59). */
export function isTimeOfDay(value: unknown): value is string {
  return typeof value === 'string' && TIME_OF_DAY.test(value);
}

/** Whether `value` names an IANA time zone this runtime knows. */
export function isTimeZone(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && IANAZone.isValidZone(value);
}

interface Daily {
  zone: IANAZone;
  minuteOfDay: number;
}

function daily(schedule: LiveExportScheduleSpec): Daily {
  const match = TIME_OF_DAY.exec(schedule.timeOfDay ?? '');
  if (!match) throw new Error(`daily schedule without a valid time_of_day (${String(schedule.timeOfDay)})`);
  if (!isTimeZone(schedule.timezone))
    throw new Error(`daily schedule without a valid timezone (${String(schedule.timezone)})`);
  return { zone: IANAZone.create(schedule.timezone), minuteOfDay: Number(match[1]) * 60 + Number(match[2]) };
}

/** Offset of `zone` (minutes east of UTC) at instant `ms`. */
function offsetAt(zone: IANAZone, ms: number): number {
  return zone.offset(ms);
}

/**
 * The slot of the local day whose midnight-as-UTC is `dayUtc` (ms of 00:00 UTC of that calendar date): the
 * instant the zone's clocks show the time of day; the first one when they show it twice; the moment of the
 * change when they skip it.
 */
function dailySlot(spec: Daily, dayUtc: number): number {
  const wall = dayUtc + spec.minuteOfDay * MINUTE; // the wall time read as if it were UTC
  const offsets = [
    ...new Set([offsetAt(spec.zone, wall - DAY), offsetAt(spec.zone, wall), offsetAt(spec.zone, wall + DAY)]),
  ];
  const valid = offsets
    .map((offset) => wall - offset * MINUTE)
    .filter((instant) => offsetAt(spec.zone, instant) * MINUTE === wall - instant);
  if (valid.length > 0) return Math.min(...valid);
  // A gap: no instant shows this wall time. The change happens between the two readings; find its minute.
  const candidates = offsets.map((offset) => wall - offset * MINUTE);
  let low = Math.min(...candidates);
  let high = Math.max(...candidates);
  const after = offsetAt(spec.zone, high);
  while (high - low > MINUTE) {
    const middle = low + Math.floor((high - low) / 2 / MINUTE) * MINUTE;
    if (offsetAt(spec.zone, middle) === after) high = middle;
    else low = middle;
  }
  return high;
}

/** 00:00 UTC of the zone's local calendar date at instant `ms`. */
function localDayUtc(zone: IANAZone, ms: number): number {
  const local = ms + offsetAt(zone, ms) * MINUTE;
  return local - (((local % DAY) + DAY) % DAY);
}

/** The first slot strictly after `after`, or null when the schedule never runs by itself. */
export function nextSlot(schedule: LiveExportScheduleSpec, after: Date): Date | null {
  if (!schedule.enabled || schedule.cadence === 'manual') return null;
  const ms = after.getTime();
  const interval = INTERVALS[schedule.cadence];
  if (interval !== undefined) return new Date(Math.floor(ms / interval) * interval + interval);
  const spec = daily(schedule);
  const start = localDayUtc(spec.zone, ms) - DAY;
  for (let day = start; day <= start + 4 * DAY; day += DAY) {
    const slot = dailySlot(spec, day);
    if (slot > ms) return new Date(slot);
  }
  throw new Error('no daily slot found within four days');
}

/** The latest slot at or before `at`, or null when the schedule never runs by itself. */
export function previousSlot(schedule: LiveExportScheduleSpec, at: Date): Date | null {
  if (!schedule.enabled || schedule.cadence === 'manual') return null;
  const ms = at.getTime();
  const interval = INTERVALS[schedule.cadence];
  if (interval !== undefined) return new Date(Math.floor(ms / interval) * interval);
  const spec = daily(schedule);
  const start = localDayUtc(spec.zone, ms) + DAY;
  for (let day = start; day >= start - 4 * DAY; day -= DAY) {
    const slot = dailySlot(spec, day);
    if (slot <= ms) return new Date(slot);
  }
  throw new Error('no daily slot found within four days');
}

/**
 * The slot to run now, or null: the latest slot at or before `now` that is later than `lastSlotAt` (the last
 * slot already handled, or, before the first one, when the schedule was set: a new schedule waits for its
 * first slot instead of running at once for one that passed before it existed).
 */
export function dueSlot(schedule: LiveExportScheduleSpec, lastSlotAt: Date | null, now: Date): Date | null {
  const slot = previousSlot(schedule, now);
  if (!slot) return null;
  if (lastSlotAt && slot.getTime() <= lastSlotAt.getTime()) return null;
  return slot;
}
