/**
 * Readers and writers of canonical values (the table in `types/type-class.ts`) used by the converters:
 * exact integers (bigint), exact decimals (digit strings), calendar dates, times, wall-clock and UTC
 * timestamps, ISO 8601 durations, uuids. No floating-point arithmetic touches an integer or a decimal.
 */

export type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string };

export function success<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

export function failure<T = never>(reason: string): Outcome<T> {
  return { ok: false, reason };
}

/** Quote a value for a message, shortened so a long text never floods an issue. */
export function show(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if (typeof value === 'number') text = Object.is(value, -0) ? '-0' : String(value);
  else text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

// ---------------------------------------------------------------------------------------------------------
// Integers

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = -MAX_SAFE;

/** The canonical form of an integer: a number when safe, otherwise a string of decimal digits. */
export function integerValue(value: bigint): number | string {
  return value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : value.toString();
}

/** Read a canonical integer (a safe integer number, or a digit string for bigints). */
export function readInteger(value: unknown): Outcome<bigint> {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return failure(`${show(value)} is not a finite number`);
    if (!Number.isInteger(value)) return failure(`${show(value)} is not an integer`);
    return success(BigInt(value));
  }
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return success(BigInt(value));
  return failure(`${show(value)} is not an integer`);
}

// ---------------------------------------------------------------------------------------------------------
// Decimals: sign + integer digits + fraction digits, exact.

export interface Decimal {
  negative: boolean;
  /** Integer digits without leading zeros ('' for zero). */
  whole: string;
  /** Fraction digits as written (trailing zeros kept: "12.50" stays "12.50"). */
  fraction: string;
}

const DECIMAL_TEXT = /^([+-])?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** Parse decimal text (`-12.50`, `+.5`, `1e-7`, `1.5E+21`); NaN, Infinity and anything else fail. */
export function parseDecimal(text: string): Outcome<Decimal> {
  const match = DECIMAL_TEXT.exec(text);
  const whole = match?.[2] ?? '';
  const fraction = match?.[3] ?? '';
  if (!match || whole.length + fraction.length === 0)
    return failure(`${show(text)} is not a finite decimal number`);
  let digits = whole + fraction;
  let point = whole.length;
  const exponent = match[4] === undefined ? 0 : Number(match[4]);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 10000)
    return failure(`${show(text)} has an exponent out of range`);
  point += exponent;
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  } else if (point > digits.length) {
    digits = digits + '0'.repeat(point - digits.length);
  }
  return success({
    negative: match[1] === '-',
    whole: digits.slice(0, point).replace(/^0+/, ''),
    fraction: digits.slice(point),
  });
}

function isZero(decimal: Decimal): boolean {
  return decimal.whole === '' && /^0*$/.test(decimal.fraction);
}

/** Canonical decimal text; negative zero is written without its sign. */
export function formatDecimal(decimal: Decimal): string {
  const sign = decimal.negative && !isZero(decimal) ? '-' : '';
  return `${sign}${decimal.whole || '0'}${decimal.fraction ? `.${decimal.fraction}` : ''}`;
}

/** Round to `scale` fraction digits, half away from zero, and pad with zeros to exactly `scale` digits. */
export function roundDecimal(decimal: Decimal, scale: number): Decimal {
  if (decimal.fraction.length <= scale) return { ...decimal, fraction: decimal.fraction.padEnd(scale, '0') };
  const kept = decimal.fraction.slice(0, scale);
  const roundUp = decimal.fraction.charCodeAt(scale) >= '5'.charCodeAt(0);
  if (!roundUp) return { ...decimal, fraction: kept };
  const magnitude = (BigInt(`${decimal.whole}${kept}` || '0') + 1n).toString().padStart(scale + 1, '0');
  return {
    negative: decimal.negative,
    whole: magnitude.slice(0, magnitude.length - scale).replace(/^0+/, ''),
    fraction: magnitude.slice(magnitude.length - scale),
  };
}

/** Integer part of a decimal, rounded half away from zero. */
export function decimalToInteger(decimal: Decimal): bigint {
  const rounded = roundDecimal(decimal, 0);
  const magnitude = BigInt(rounded.whole || '0');
  return rounded.negative ? -magnitude : magnitude;
}

/**
 * Exact decimal text of a finite number (shortest round-trip digits, no exponent): 1e21 ->
 * "1000000000000000000000".
 */
export function numberToDecimal(value: number): Decimal {
  const parsed = parseDecimal(String(value));
  if (!parsed.ok) throw new Error(`unexpected number text ${String(value)}`);
  return parsed.value;
}

export interface DecimalLimits {
  precision: number | null;
  scale: number | null;
}

/** Fit a decimal into `numeric(p,s)`: round the fraction to the scale, refuse too many integer digits. */
export function fitDecimal(decimal: Decimal, limits: DecimalLimits): Outcome<Decimal> {
  const scale = limits.scale ?? (limits.precision !== null ? 0 : null);
  const fitted = scale === null ? decimal : roundDecimal(decimal, scale);
  if (limits.precision !== null) {
    const room = limits.precision - (scale ?? 0);
    if (fitted.whole.length > room)
      return failure(
        `${formatDecimal(decimal)} does not fit decimal(${limits.precision},${scale ?? 0}) (at most ` +
          `${room} integer digits)`,
      );
  }
  return success(fitted);
}

// ---------------------------------------------------------------------------------------------------------
// Dates and times

export interface DateParts {
  year: number;
  month: number;
  day: number;
}

export interface TimeParts {
  hour: number;
  minute: number;
  second: number;
  /** Fraction digits after the point, at most 6 ('' for none). */
  fraction: string;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME_TEXT = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?$/;
const ZONE_TEXT = /^(?:([zZ])|([+-])(\d{2})(?::?(\d{2}))?)$/;

export function parseDate(text: string): Outcome<DateParts> {
  const match = DATE_TEXT.exec(text);
  if (!match) return failure(`${show(text)} is not a date (YYYY-MM-DD)`);
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month))
    return failure(`${show(text)} is not a valid calendar date`);
  return success({ year, month, day });
}

/**
 * Parse `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff...`. Fractions beyond microseconds are truncated to six digits;
 * `24:00:00` (end of day, as PostgreSQL allows) is accepted.
 */
export function parseTime(text: string): Outcome<TimeParts> {
  const match = TIME_TEXT.exec(text);
  if (!match) return failure(`${show(text)} is not a time (HH:MM:SS)`);
  const hour = Number(match[1]);
  const minute = Number(match[2]);
  const second = match[3] === undefined ? 0 : Number(match[3]);
  const fraction = (match[4] ?? '').slice(0, 6);
  const endOfDay = hour === 24 && minute === 0 && second === 0 && /^0*$/.test(fraction);
  if ((hour > 23 && !endOfDay) || minute > 59 || second > 59)
    return failure(`${show(text)} is not a valid time of day`);
  return success({ hour, minute, second, fraction });
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

export function formatDate(date: DateParts): string {
  return `${pad(date.year, 4)}-${pad(date.month, 2)}-${pad(date.day, 2)}`;
}

export function formatTime(time: TimeParts): string {
  return `${pad(time.hour, 2)}:${pad(time.minute, 2)}:${pad(time.second, 2)}${time.fraction ? `.${time.fraction}` : ''}`;
}

export interface DateTimeParts {
  date: DateParts;
  time: TimeParts;
  /** Minutes east of UTC when the text carried a zone (`Z` = 0), null for a wall-clock value. */
  offsetMinutes: number | null;
}

/**
 * Parse `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.f]]` (or a space instead of `T`), optionally followed by a zone
 * (`Z`, `+02:00`, `-0530`, `+02`). A bare date is midnight.
 */
export function parseDateTime(text: string): Outcome<DateTimeParts> {
  const split = /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(.*))?$/.exec(text);
  if (!split) return failure(`${show(text)} is not a date and time (YYYY-MM-DDTHH:MM:SS)`);
  const date = parseDate(split[1] ?? '');
  if (!date.ok) return date;
  const time =
    split[2] === undefined
      ? success<TimeParts>({ hour: 0, minute: 0, second: 0, fraction: '' })
      : parseTime(split[2]);
  if (!time.ok) return time;
  const zone = split[3] ?? '';
  let offsetMinutes: number | null = null;
  if (zone !== '') {
    const match = ZONE_TEXT.exec(zone);
    if (!match) return failure(`${show(text)} has an unreadable time zone ${show(zone)}`);
    if (match[1]) offsetMinutes = 0;
    else {
      const hours = Number(match[3]);
      const minutes = Number(match[4] ?? '0');
      if (hours > 23 || minutes > 59) return failure(`${show(text)} has an invalid offset`);
      offsetMinutes = (match[2] === '-' ? -1 : 1) * (hours * 60 + minutes);
    }
  }
  return success({ date: date.value, time: time.value, offsetMinutes });
}

/**
 * Move a date and time by `minutes` (UTC calendar arithmetic; also normalises `24:00:00` to the next day).
 * The fraction of a second is carried unchanged.
 */
export function shiftDateTime(value: DateTimeParts, minutes: number): { date: DateParts; time: TimeParts } {
  const instant = new Date(0);
  instant.setUTCFullYear(value.date.year, value.date.month - 1, value.date.day);
  instant.setUTCHours(value.time.hour, value.time.minute + minutes, value.time.second, 0);
  return {
    date: { year: instant.getUTCFullYear(), month: instant.getUTCMonth() + 1, day: instant.getUTCDate() },
    time: {
      hour: instant.getUTCHours(),
      minute: instant.getUTCMinutes(),
      second: instant.getUTCSeconds(),
      fraction: value.time.fraction,
    },
  };
}

/**
 * The UTC wall clock of a parsed date-time: a value with an offset is moved to UTC, a wall clock is taken as
 * UTC.
 */
export function toUtc(value: DateTimeParts): { date: DateParts; time: TimeParts } {
  return shiftDateTime(value, -(value.offsetMinutes ?? 0));
}

export function formatDateTime(value: { date: DateParts; time: TimeParts }): string {
  return `${formatDate(value.date)}T${formatTime(value.time)}`;
}

// ---------------------------------------------------------------------------------------------------------
// Other strings

const NUMBER_PART = '-?\\d+(?:[.,]\\d+)?';
const DURATION = new RegExp(
  `^[+-]?P(?=.)(?:${NUMBER_PART}Y)?(?:${NUMBER_PART}M)?(?:${NUMBER_PART}W)?(?:${NUMBER_PART}D)?` +
    `(?:T(?=.)(?:${NUMBER_PART}H)?(?:${NUMBER_PART}M)?(?:${NUMBER_PART}S)?)?$`,
);

/** An ISO 8601 duration (`P1Y2M3DT4H5M6.5S`, `PT0S`, PostgreSQL's `P-1D`); upper case designators. */
export function parseInterval(text: string): Outcome<string> {
  const upper = text.toUpperCase();
  return DURATION.test(upper)
    ? success(upper)
    : failure(`${show(text)} is not an ISO 8601 duration (for example P1DT2H)`);
}

const UUID_TEXT =
  /^\{?([0-9a-fA-F]{8})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{4})-?([0-9a-fA-F]{12})\}?$/;

/** A uuid in lower case with hyphens; accepts upper case, braces and the 32-digit form. */
export function parseUuid(text: string): Outcome<string> {
  const match = UUID_TEXT.exec(text);
  if (!match || text.startsWith('{') !== text.endsWith('}')) return failure(`${show(text)} is not a uuid`);
  return success(match.slice(1, 6).join('-').toLowerCase());
}

const TRUE_WORDS = new Set(['true', 't', 'yes', 'y', 'on', '1']);
const FALSE_WORDS = new Set(['false', 'f', 'no', 'n', 'off', '0']);

/** `true/false`, `t/f`, `yes/no`, `y/n`, `on/off`, `1/0`, any case. */
export function parseBoolean(text: string): Outcome<boolean> {
  const word = text.toLowerCase();
  if (TRUE_WORDS.has(word)) return success(true);
  if (FALSE_WORDS.has(word)) return success(false);
  return failure(`${show(text)} is not a boolean (true/false, yes/no, 1/0)`);
}

/** Number of characters (code points, as `varchar(n)` counts them). */
export function characterLength(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}
