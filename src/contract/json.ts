/** Why a value cannot round-trip through JSON, with the path where it went wrong. */
export class NotJsonError extends Error {
  override readonly name = 'NotJsonError';
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

interface Options {
  /** Also refuse strings Postgres jsonb cannot store (NUL). Unpaired surrogates are always refused. */
  readonly storable: boolean;
}

/**
 * How deeply values may nest. Deeper ones are refused with a path instead of overflowing the stack here, in the
 * canonical hash or in Postgres's JSON parser.
 */
export const MAX_JSON_DEPTH = 512;

const REFUSED_CLASSES: ReadonlyArray<[abstract new (...args: never[]) => object, string]> = [
  [Map, 'a Map'],
  [Set, 'a Set'],
  [WeakMap, 'a WeakMap'],
  [WeakSet, 'a WeakSet'],
  [Promise, 'a Promise (did you forget an await?)'],
];

/** What kind of non-JSON object this is (a Map, a Promise, …), or undefined for objects JSON can hold. */
function refusedClassOf(object: object): string | undefined {
  const proto = Object.getPrototypeOf(object);
  // Plain objects and arrays, the usual case, skip the instanceof checks.
  if (proto === Object.prototype || proto === Array.prototype || proto === null) return undefined;
  for (const [cls, label] of REFUSED_CLASSES) if (object instanceof cls) return label;
  return undefined;
}

/** What JSON.stringify writes in place of `value` under `key`: the result of its `toJSON`, if it has one. */
export function viaToJson(value: unknown, key: string): unknown {
  if (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  ) {
    return (value as { toJSON: (k: string) => unknown }).toJSON(key);
  }
  return value;
}

/**
 * Why a value (after `toJSON`) is not JSON, for a `NotJsonError`, or undefined when it is. `storable` also refuses
 * strings Postgres jsonb cannot store (NUL). Circular structures and depth are the walk's to find.
 */
export function refusalOf(value: unknown, storable: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
      // An unpaired surrogate has no UTF-8 form: neither the canonical hash nor Postgres can take it.
      if (!value.isWellFormed()) return 'string contains an unpaired surrogate';
      return storable && value.includes('\u0000') ? 'string contains a NUL character' : undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `number ${value} is not finite`;
    case 'bigint':
      return 'BigInt is not JSON; convert it to a string';
    case 'function':
      return 'functions are not JSON';
    case 'symbol':
      return 'symbols are not JSON';
    case 'object': {
      const refused = value === null ? undefined : refusedClassOf(value);
      return refused && `${refused} is not JSON`;
    }
    default:
      return undefined;
  }
}

/**
 * Copies a value into plain JSON with `JSON.stringify` semantics (toJSON, dropped undefined properties), but
 * refuses what JSON.stringify would silently mangle or crash on: BigInt, functions, symbols, non-finite numbers,
 * circular structures, Maps and Sets.
 */
export function toJsonValue(value: unknown, options: Options): JsonValue {
  const ancestors: object[] = [];

  const walk = (input: unknown, path: string, key: string): JsonValue | undefined => {
    if (ancestors.length >= MAX_JSON_DEPTH) {
      throw new NotJsonError(path, `nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const current = viaToJson(input, key);
    const refused = refusalOf(current, options.storable);
    if (refused) throw new NotJsonError(path, refused);
    switch (typeof current) {
      case 'undefined':
        return undefined;
      case 'boolean':
      case 'string':
        return current;
      case 'number':
        // JSON has no negative zero: without this, a first call would return -0 and its replay 0.
        return current === 0 ? 0 : current;
    }
    if (current === null || typeof current !== 'object') return null;
    const object = current;
    if (ancestors.includes(object)) throw new NotJsonError(path, 'circular reference');
    ancestors.push(object);
    try {
      if (Array.isArray(object)) {
        return object.map((item, index) => walk(item, `${path}[${index}]`, String(index)) ?? null);
      }
      const out: { [key: string]: JsonValue } = {};
      for (const [k, v] of Object.entries(object)) {
        if (!k.isWellFormed() || (options.storable && k.includes('\u0000'))) {
          throw new NotJsonError(`${path}.${k}`, 'property name cannot be stored');
        }
        const converted = walk(v, `${path}.${k}`, k);
        if (converted === undefined) continue;
        // Assigning "__proto__" would set the prototype and drop the key; JSON.parse keeps it as a plain key.
        if (k === '__proto__') {
          Object.defineProperty(out, k, {
            value: converted,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else {
          out[k] = converted;
        }
      }
      return out;
    } finally {
      ancestors.pop();
    }
  };

  return walk(value, '$', '') ?? null;
}
