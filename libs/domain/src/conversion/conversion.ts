/**
 * The type conversion table: for each ordered pair of type classes (source -> target) a converter or
 * "incompatible", with a severity. Mapping validation (`incompatible_field_types`) and the engine use this
 * one table, so what validates always converts. The matrix is documented in ./README.md (and checked by the
 * spec).
 */
import { CanonicalValue, JsonValue, TypeClass } from '../types/type-class';
import {
  characterLength,
  decimalToInteger,
  DecimalLimits,
  fitDecimal,
  formatDate,
  formatDateTime,
  formatDecimal,
  formatTime,
  integerValue,
  numberToDecimal,
  Outcome,
  parseBoolean,
  parseDate,
  parseDateTime,
  parseDecimal,
  parseInterval,
  parseTime,
  parseUuid,
  readInteger,
  show,
  toUtc,
} from './values';
import {
  allowsMultiple,
  decimalLimits,
  detailNumber,
  detailOptions,
  elementOf,
  JSON_ELEMENTS,
  readBoolean,
  readDecimal,
  readFloat,
  readList,
  readRelation,
  readString,
  readStringList,
  readWallClock,
  TEXT,
} from './readers';

/**
 * A field's type as far as conversion cares: its class and its `type_details` (spec 2.7, snake_case keys).
 */
export interface FieldTypeInfo {
  typeClass: TypeClass;
  typeDetails: Record<string, unknown> | null;
}

export type ConvertResult = { ok: true; value: CanonicalValue } | { ok: false; reason: string };

/** `ok`: converts without losing information. `lossy`: converts, but some values may change or fail. */
export type ConversionSeverity = 'ok' | 'lossy';

export type Conversion =
  | { kind: 'incompatible'; reason: string }
  | { kind: ConversionSeverity; reason?: string; convert(value: CanonicalValue): ConvertResult };

/** A canonical value other than null (null always converts to null and never reaches a converter). */
export type Present = Exclude<CanonicalValue, null>;
type Converter = (value: Present) => ConvertResult;

function ok(value: CanonicalValue): ConvertResult {
  return { ok: true, value };
}

function fail(reason: string): ConvertResult {
  return { ok: false, reason };
}

function lift<T>(outcome: Outcome<T>, map: (value: T) => CanonicalValue): ConvertResult {
  return outcome.ok ? ok(map(outcome.value)) : outcome;
}

// ---------------------------------------------------------------------------------------------------------
// Text -> other classes (also used for JSON strings and for select labels). Blank text is "no value".

const FLOAT_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

type TextParser = (text: string, to: FieldTypeInfo) => ConvertResult;

const PARSE_TEXT: Partial<Record<TypeClass, TextParser>> = {
  integer: (text) => {
    const decimal = parseDecimal(text);
    if (!decimal.ok) return fail(`${show(text)} is not a whole number`);
    if (!/^0*$/.test(decimal.value.fraction)) return fail(`${show(text)} is not a whole number`);
    return ok(integerValue(decimalToInteger(decimal.value)));
  },
  decimal: (text) => lift(parseDecimal(text), formatDecimal),
  float: (text) => {
    const number = Number(text);
    if (!FLOAT_TEXT.test(text) || !Number.isFinite(number))
      return fail(`${show(text)} is not a finite number`);
    return ok(number === 0 ? 0 : number);
  },
  boolean: (text) => lift(parseBoolean(text), (value) => value),
  date: (text) => lift(parseDate(text), formatDate),
  time: (text) => lift(parseTime(text), formatTime),
  datetime: (text) =>
    lift(parseDateTime(text), (parts) => formatDateTime(parts.offsetMinutes === null ? parts : toUtc(parts))),
  timestamp: (text) => lift(parseDateTime(text), (parts) => `${formatDateTime(toUtc(parts))}Z`),
  interval: (text) => lift(parseInterval(text), (value) => value),
  uuid: (text) => lift(parseUuid(text), (value) => value),
  json: (text) => {
    try {
      return ok(JSON.parse(text) as JsonValue);
    } catch {
      return fail(`${show(text)} is not valid JSON`);
    }
  },
  select: (text) => ok(text),
  multi_select: (text) =>
    ok(
      unique(
        text
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== ''),
      ),
    ),
  array: (text, to) => {
    const parsed = PARSE_TEXT.json?.(text, to) ?? fail('unreachable');
    if (!parsed.ok) return parsed;
    if (!Array.isArray(parsed.value)) return fail(`${show(text)} is not a JSON array`);
    return convertWith(conversionFor(JSON_ELEMENTS, to), parsed.value);
  },
};

/** Text that parses keeps its meaning; leading/trailing blanks are ignored; blank text becomes null. */
function fromText(to: FieldTypeInfo): Converter | null {
  const parse = PARSE_TEXT[to.typeClass];
  if (!parse) return null;
  return (value) => {
    const text = readString(value, 'text');
    if (!text.ok) return text;
    const trimmed = to.typeClass === 'select' || to.typeClass === 'json' ? text.value : text.value.trim();
    if (trimmed.trim() === '') return ok(null);
    return parse(trimmed, to);
  };
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

function convertWith(conversion: Conversion, value: CanonicalValue): ConvertResult {
  return conversion.kind === 'incompatible' ? fail(conversion.reason) : conversion.convert(value);
}

// ---------------------------------------------------------------------------------------------------------
// The table

interface Rule {
  severity: ConversionSeverity;
  reason?: string;
  /**
   * Build the converter for two concrete fields; may depend on type_details (element classes, multiplicity).
   */
  build(from: FieldTypeInfo, to: FieldTypeInfo): Conversion;
}

function rule(
  severity: ConversionSeverity,
  convert: (value: Present, from: FieldTypeInfo, to: FieldTypeInfo) => ConvertResult,
  reason?: string,
): Rule {
  return {
    severity,
    reason,
    build: (from, to) => ({
      kind: severity,
      reason,
      convert: (value) => (value === null ? ok(null) : convert(value, from, to)),
    }),
  };
}

function stringRule(what: string): Rule {
  return rule('ok', (value) => lift(readString(value, what), (text) => text));
}

function textParseRule(target: TypeClass, reason: string): Rule {
  return rule(
    'lossy',
    (value, _from, to) => (fromText(to) ?? (() => fail(`no text parser for ${target}`)))(value),
    reason,
  );
}

/** JSON values convert by their own shape: a JSON string like text, a number like an integer/float, ... */
function jsonRule(target: TypeClass): Rule {
  return rule(
    'lossy',
    (value, _from, to) => {
      let shape: FieldTypeInfo;
      let name: string;
      if (typeof value === 'string') [shape, name] = [TEXT, 'string'];
      else if (typeof value === 'boolean')
        [shape, name] = [{ typeClass: 'boolean', typeDetails: null }, 'boolean'];
      else if (typeof value === 'number')
        [shape, name] = [
          { typeClass: Number.isInteger(value) ? 'integer' : 'float', typeDetails: null },
          'number',
        ];
      else if (Array.isArray(value)) [shape, name] = [JSON_ELEMENTS, 'array'];
      else return fail(`a JSON object cannot be converted to ${target}`);
      const inner = conversionFor(shape, to);
      if (inner.kind === 'incompatible') return fail(`a JSON ${name} cannot be converted to ${target}`);
      return inner.convert(value);
    },
    `only JSON values of a matching shape convert to ${target}`,
  );
}

function asSelect(info: FieldTypeInfo): FieldTypeInfo {
  const options = detailOptions(info);
  return { typeClass: 'select', typeDetails: options ? { options } : null };
}

function worst(...severities: ConversionSeverity[]): ConversionSeverity {
  return severities.includes('lossy') ? 'lossy' : 'ok';
}

function joinReasons(...reasons: (string | undefined)[]): string | undefined {
  const present = [...new Set(reasons.filter((reason): reason is string => !!reason))];
  return present.length ? present.join('; ') : undefined;
}

/** Element-wise conversion of lists: array -> array, multi_select -> array, array -> multi_select. */
function listRule(
  severity: ConversionSeverity,
  elementsOf: (info: FieldTypeInfo) => FieldTypeInfo,
  reason?: string,
): Rule {
  return {
    severity,
    reason,
    build(from, to) {
      const target = to.typeClass === 'multi_select' ? asSelect(to) : elementOf(to);
      const element = conversionFor(elementsOf(from), target);
      if (element.kind === 'incompatible')
        return { kind: 'incompatible', reason: `elements cannot be converted: ${element.reason}` };
      const toSet = to.typeClass === 'multi_select';
      return {
        kind: worst(severity, element.kind),
        reason: joinReasons(reason, element.reason),
        convert(value) {
          if (value === null) return ok(null);
          const list = readList(value);
          if (!list.ok) return list;
          const out: JsonValue[] = [];
          for (const item of list.value) {
            const converted = element.convert(item);
            if (!converted.ok) return fail(`element ${show(item)}: ${converted.reason}`);
            if (toSet && converted.value === null) continue;
            if (toSet && out.includes(converted.value)) continue;
            out.push(converted.value);
          }
          return ok(out);
        },
      };
    },
  };
}

const relationRule: Rule = {
  severity: 'ok',
  build(from, to) {
    const many = allowsMultiple(to);
    const narrowing = allowsMultiple(from) && !many;
    return {
      kind: narrowing ? 'lossy' : 'ok',
      reason: narrowing ? 'the target links one record; a value linking several records fails' : undefined,
      convert(value) {
        if (value === null) return ok(null);
        const ids = readRelation(value);
        if (!ids.ok) return ids;
        if (many) return ok(ids.value);
        if (ids.value.length > 1)
          return fail(`the target links one record, the value links ${ids.value.length}`);
        return ok(ids.value[0] ?? null);
      },
    };
  },
};

const TABLE: Record<TypeClass, Partial<Record<TypeClass, Rule>>> = {
  text: {
    text: stringRule('text'),
    integer: textParseRule('integer', 'text that is not a whole number fails'),
    decimal: textParseRule('decimal', 'text that is not a decimal number fails'),
    float: textParseRule('float', 'text that is not a number fails'),
    boolean: textParseRule('boolean', 'text other than true/false, yes/no, 1/0 fails'),
    date: textParseRule('date', 'text that is not a YYYY-MM-DD date fails'),
    time: textParseRule('time', 'text that is not a HH:MM:SS time fails'),
    datetime: textParseRule('datetime', 'text that is not a date and time fails; a zone is converted to UTC'),
    timestamp: textParseRule(
      'timestamp',
      'text that is not a date and time fails; text without a zone is taken as UTC',
    ),
    interval: textParseRule('interval', 'text that is not an ISO 8601 duration fails'),
    uuid: textParseRule('uuid', 'text that is not a uuid fails'),
    json: textParseRule('json', 'text that is not valid JSON fails'),
    select: rule('ok', (value, _from, to) => (fromText(to) as Converter)(value)),
    multi_select: textParseRule('multi_select', 'the text is split at commas'),
    array: textParseRule('array', 'text that is not a JSON array of matching elements fails'),
  },
  integer: {
    text: rule('ok', (value) => lift(readInteger(value), (number) => number.toString())),
    integer: rule('ok', (value) =>
      // A safe integer stays itself (-0 becomes 0): what the general path gives, without a bigint.
      typeof value === 'number' && Number.isSafeInteger(value)
        ? ok(value === 0 ? 0 : value)
        : lift(readInteger(value), integerValue),
    ),
    decimal: rule('ok', (value) => lift(readInteger(value), (number) => number.toString())),
    float: rule('lossy', (value) => lift(readInteger(value), Number), 'integers beyond 2^53 are rounded'),
    boolean: rule(
      'lossy',
      (value) => {
        const number = readInteger(value);
        if (!number.ok) return number;
        if (number.value !== 0n && number.value !== 1n) return fail(`${show(value)} is neither 0 nor 1`);
        return ok(number.value === 1n);
      },
      'only 0 and 1 convert',
    ),
    json: rule('ok', (value) => lift(readInteger(value), integerValue)),
    select: rule('ok', (value) => lift(readInteger(value), (number) => number.toString())),
  },
  decimal: {
    text: stringRule('a decimal'),
    integer: rule(
      'lossy',
      (value) => lift(readDecimal(value), (decimal) => integerValue(decimalToInteger(decimal))),
      'the fraction is rounded (half away from zero)',
    ),
    decimal: rule('ok', (value) => lift(readDecimal(value), formatDecimal)),
    float: rule(
      'lossy',
      (value) => {
        const decimal = readDecimal(value);
        if (!decimal.ok) return decimal;
        const number = Number(formatDecimal(decimal.value));
        return Number.isFinite(number)
          ? ok(number === 0 ? 0 : number)
          : fail(`${show(value)} is out of float range`);
      },
      'digits beyond double precision are rounded',
    ),
    json: stringRule('a decimal'),
  },
  float: {
    text: rule('ok', (value) => lift(readFloat(value), String)),
    integer: rule(
      'lossy',
      (value) =>
        lift(readFloat(value), (number) =>
          integerValue(BigInt(Math.sign(number) * Math.round(Math.abs(number)))),
        ),
      'the fraction is rounded (half away from zero)',
    ),
    decimal: rule('ok', (value) =>
      lift(readFloat(value), (number) => formatDecimal(numberToDecimal(number))),
    ),
    float: rule('ok', (value) => lift(readFloat(value), (number) => number)),
    json: rule('ok', (value) => lift(readFloat(value), (number) => number)),
  },
  boolean: {
    text: rule('ok', (value) => lift(readBoolean(value), String)),
    integer: rule('ok', (value) => lift(readBoolean(value), (flag) => (flag ? 1 : 0))),
    boolean: rule('ok', (value) => lift(readBoolean(value), (flag) => flag)),
    json: rule('ok', (value) => lift(readBoolean(value), (flag) => flag)),
  },
  date: {
    text: stringRule('a date'),
    date: stringRule('a date'),
    datetime: rule('ok', (value) => lift(readString(value, 'a date'), (text) => `${text}T00:00:00`)),
    timestamp: rule('ok', (value) => lift(readString(value, 'a date'), (text) => `${text}T00:00:00Z`)),
    json: stringRule('a date'),
  },
  time: {
    text: stringRule('a time'),
    time: stringRule('a time'),
    json: stringRule('a time'),
  },
  datetime: {
    text: stringRule('a date and time'),
    date: rule(
      'lossy',
      (value) => lift(readWallClock(value), (parts) => formatDate(parts.date)),
      'the time of day is dropped',
    ),
    time: rule(
      'lossy',
      (value) => lift(readWallClock(value), (parts) => formatTime(parts.time)),
      'the date is dropped',
    ),
    datetime: stringRule('a date and time'),
    timestamp: rule(
      'lossy',
      (value) => lift(readWallClock(value), (parts) => `${formatDateTime(parts)}Z`),
      'the wall-clock time is taken as UTC',
    ),
    json: stringRule('a date and time'),
  },
  timestamp: {
    text: stringRule('a timestamp'),
    date: rule(
      'lossy',
      (value) => lift(readWallClock(value), (parts) => formatDate(parts.date)),
      'the time of day is dropped (the date is taken in UTC)',
    ),
    time: rule(
      'lossy',
      (value) => lift(readWallClock(value), (parts) => formatTime(parts.time)),
      'the date is dropped (the time of day is taken in UTC)',
    ),
    datetime: rule(
      'lossy',
      (value) => lift(readWallClock(value), formatDateTime),
      'the instant becomes its UTC wall-clock time',
    ),
    timestamp: stringRule('a timestamp'),
    json: stringRule('a timestamp'),
  },
  interval: {
    text: stringRule('an interval'),
    interval: stringRule('an interval'),
    json: stringRule('an interval'),
  },
  uuid: {
    text: stringRule('a uuid'),
    uuid: rule('ok', (value) => lift(readString(value, 'a uuid'), (text) => text.toLowerCase())),
    json: stringRule('a uuid'),
  },
  json: {
    text: rule('ok', (value) => ok(JSON.stringify(value))),
    integer: jsonRule('integer'),
    decimal: jsonRule('decimal'),
    float: jsonRule('float'),
    boolean: jsonRule('boolean'),
    date: jsonRule('date'),
    time: jsonRule('time'),
    datetime: jsonRule('datetime'),
    timestamp: jsonRule('timestamp'),
    interval: jsonRule('interval'),
    uuid: jsonRule('uuid'),
    json: rule('ok', (value) => ok(value)),
    select: jsonRule('select'),
    multi_select: jsonRule('multi_select'),
    array: jsonRule('array'),
  },
  select: {
    text: stringRule('an option'),
    integer: rule(
      'lossy',
      (value, _from, to) => (fromText(to) as Converter)(value),
      'options that are not whole numbers fail',
    ),
    select: stringRule('an option'),
    multi_select: rule('ok', (value) => lift(readString(value, 'an option'), (text) => [text])),
    json: stringRule('an option'),
  },
  multi_select: {
    text: rule('ok', (value) => lift(readStringList(value, 'an option'), (items) => items.join(', '))),
    select: rule(
      'lossy',
      (value) => {
        const items = readStringList(value, 'an option');
        if (!items.ok) return items;
        if (items.value.length > 1) return fail(`${show(value)} holds several options; the target holds one`);
        return ok(items.value[0] ?? null);
      },
      'a value holding several options fails',
    ),
    multi_select: rule('ok', (value) => lift(readStringList(value, 'an option'), (items) => items)),
    array: listRule('ok', asSelect),
    json: rule('ok', (value) => lift(readStringList(value, 'an option'), (items) => items)),
  },
  array: {
    text: rule('ok', (value) => lift(readList(value), (items) => JSON.stringify(items))),
    multi_select: listRule('lossy', elementOf, 'duplicates are dropped and each element becomes an option'),
    array: listRule('ok', elementOf),
    json: rule('ok', (value) => lift(readList(value), (items) => items)),
  },
  relation: {
    relation: relationRule,
  },
  unsupported: {},
};

// ---------------------------------------------------------------------------------------------------------
// Constraints of the target field (max_length, options, precision/scale), applied after every converter

interface TargetConstraint {
  /** Why values may fail or change, or null when the source can never break the constraint. */
  lossy: string | null;
  apply(value: Present): ConvertResult;
}

/** The longest canonical text a source field can produce, when bounded. */
function maxTextLength(from: FieldTypeInfo): number | null {
  switch (from.typeClass) {
    case 'text':
      return detailNumber(from, 'max_length');
    case 'integer':
      return 20;
    case 'boolean':
      return 5;
    case 'date':
      return 10;
    case 'time':
      return 15;
    case 'datetime':
      return 26;
    case 'timestamp':
      return 27;
    case 'uuid':
      return 36;
    case 'select': {
      const options = detailOptions(from);
      return options ? Math.max(0, ...options.map(characterLength)) : null;
    }
    case 'decimal': {
      const precision = detailNumber(from, 'precision');
      return precision === null ? null : precision + 2;
    }
    default:
      return null;
  }
}

function decimalAlwaysFits(from: FieldTypeInfo, target: DecimalLimits): boolean {
  if (target.precision === null && target.scale === null) return true;
  const targetScale = target.scale ?? 0;
  const room = target.precision === null ? Infinity : target.precision - targetScale;
  if (from.typeClass === 'integer') return room >= 20;
  if (from.typeClass !== 'decimal') return false;
  const source = decimalLimits(from);
  if (source.precision === null) return false;
  const sourceScale = source.scale ?? 0;
  return (target.scale === null || sourceScale <= targetScale) && source.precision - sourceScale <= room;
}

function targetConstraint(from: FieldTypeInfo, to: FieldTypeInfo): TargetConstraint | null {
  switch (to.typeClass) {
    case 'text': {
      const max = detailNumber(to, 'max_length');
      if (max === null) return null;
      const bound = maxTextLength(from);
      return {
        lossy:
          bound !== null && bound <= max
            ? null
            : `text longer than ${max} characters (the target's max_length) fails`,
        // A text of at most `max` UTF-16 units has at most `max` characters: only longer ones are counted.
        apply: (value) =>
          typeof value === 'string' && value.length > max && characterLength(value) > max
            ? fail(`${show(value)} is longer than ${max} characters`)
            : ok(value),
      };
    }
    case 'select':
    case 'multi_select': {
      const options = detailOptions(to);
      if (options === null) return null;
      const allowed = new Set(options);
      const source =
        from.typeClass === 'select' || from.typeClass === 'multi_select' ? detailOptions(from) : null;
      const covered = source !== null && source.every((option) => allowed.has(option));
      const check = (item: JsonValue): string | null =>
        typeof item === 'string' && !allowed.has(item)
          ? `${show(item)} is not one of the target field's options`
          : null;
      return {
        lossy: covered ? null : "values that are not among the target field's options fail",
        apply: (value) => {
          const problem = Array.isArray(value)
            ? value.map(check).find((reason) => reason !== null)
            : check(value);
          return problem ? fail(problem) : ok(value);
        },
      };
    }
    case 'decimal': {
      const limits = decimalLimits(to);
      if (limits.precision === null && limits.scale === null) return null;
      const scale = limits.scale ?? 0;
      return {
        lossy: decimalAlwaysFits(from, limits)
          ? null
          : `values are rounded to ${scale} decimal places and fail beyond ` +
            `decimal(${limits.precision ?? '*'},${scale})`,
        apply: (value) => {
          const decimal = readDecimal(value);
          if (!decimal.ok) return decimal;
          return lift(fitDecimal(decimal.value, limits), formatDecimal);
        },
      };
    }
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------------------------------------

function incompatibleReason(from: TypeClass, to: TypeClass): string {
  if (from === 'unsupported' || to === 'unsupported')
    return 'a field of an unsupported type is never read or written';
  if (from === 'relation' || to === 'relation')
    return 'a linked-record (relation) field maps only to another relation field';
  return `${from} values cannot be converted to ${to}`;
}

/** The base severity of a class pair as listed in the matrix (type_details may make an `ok` pair lossy). */
export function conversionSeverity(from: TypeClass, to: TypeClass): ConversionSeverity | 'incompatible' {
  return TABLE[from][to]?.severity ?? 'incompatible';
}

/**
 * How values of the field `from` convert into the field `to`. `incompatible` pairs never convert; `lossy`
 * pairs convert but may change or refuse some values (validation warns); `ok` pairs keep every value.
 * `convert` always maps null to null; a value that cannot convert is `{ ok: false, reason }` (a record
 * issue).
 */
export function conversionFor(from: FieldTypeInfo, to: FieldTypeInfo): Conversion {
  const entry = TABLE[from.typeClass][to.typeClass];
  if (!entry) return { kind: 'incompatible', reason: incompatibleReason(from.typeClass, to.typeClass) };
  const base = entry.build(from, to);
  if (base.kind === 'incompatible') return base;
  const constraint = targetConstraint(from, to);
  if (!constraint) return base;
  return {
    kind: worst(base.kind, constraint.lossy ? 'lossy' : 'ok'),
    reason: joinReasons(base.reason, constraint.lossy ?? undefined),
    convert(value) {
      const converted = base.convert(value);
      if (!converted.ok || converted.value === null) return converted;
      return constraint.apply(converted.value);
    },
  };
}
