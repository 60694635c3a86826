import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, jsonText, omitTreeOf } from '../../src/contract/canonical-json.js';
import { parameterHash } from '../../src/contract/fingerprint.js';
import { type JsonValue, NotJsonError, toJsonValue } from '../../src/contract/json.js';

const json = fc.jsonValue({ maxDepth: 4 });

function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, seed));
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    const rotated = entries.map((_, i) => entries[(i + seed) % entries.length]!);
    return Object.fromEntries(rotated.reverse().map(([k, v]) => [k, shuffleKeys(v, seed)]));
  }
  return value;
}

const hash = (value: unknown, volatile: string[] = []) => parameterHash(value, omitTreeOf(volatile));

/** The hash as it was computed before the single walk: convert, delete volatile paths, canonicalize, hash. */
function removePath(value: JsonValue, segments: readonly string[]): void {
  const [head, ...rest] = segments;
  if (head === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  if (rest.length === 0) {
    delete value[head];
    return;
  }
  const child = value[head];
  if (child !== undefined) removePath(child, rest);
}
function previousHash(value: unknown, volatile: string[] = []): string {
  const json = toJsonValue(value, { storable: false });
  for (const field of volatile) removePath(json, field.split('.'));
  return createHash('sha256')
    .update(canonicalize(json) ?? 'null', 'utf8')
    .digest('hex');
}
/** What a call of `fn` throws, as the path and reason a refusal reports. */
function refusalOf(fn: () => unknown): { path: string; reason: string } | 'ok' | 'other' {
  try {
    fn();
    return 'ok';
  } catch (error) {
    return error instanceof NotJsonError ? { path: error.path, reason: error.reason } : 'other';
  }
}

// Values of every shape the walk treats differently: toJSON, undefined, -0, odd keys, and what it refuses.
const odd = fc.oneof(
  fc.constant(undefined),
  fc.constant(-0),
  fc.constant(Number.NaN),
  fc.constant(1n),
  fc.constant(() => 1),
  fc.constant(Symbol('s')),
  fc.constant(new Map()),
  fc.constant('\ud800'),
  fc.date({ noInvalidDate: true }),
  fc.string({ unit: 'binary' }),
  fc.double(),
);
const anyValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 1 }), odd, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(
    fc.oneof(
      fc.string({ unit: 'binary', maxLength: 4 }),
      fc.constantFrom('__proto__', 'toJSON', 'a', 'b', 'a.b'),
    ),
    tie('value'),
    { maxKeys: 5 },
  ),
})).value;

describe('parameter hash', () => {
  it('is byte for byte the hash of the conversion, deletion and canonicalize it replaced, refusals alike', () => {
    fc.assert(
      fc.property(
        anyValue,
        fc.subarray(['a', 'b', 'a.b', 'b.a', '__proto__', 'a.a.a']),
        (value, volatile) => {
          const before = refusalOf(() => previousHash(value, volatile));
          const after = refusalOf(() => hash(value, volatile));
          expect(after).toEqual(before);
          if (before === 'ok') expect(hash(value, volatile)).toBe(previousHash(value, volatile));
        },
      ),
      { numRuns: 3000 },
    );
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = { back: cycle };
    expect(refusalOf(() => hash(cycle))).toEqual(refusalOf(() => previousHash(cycle)));
    const deep: unknown[] = [];
    let at = deep;
    for (let i = 0; i < 600; i++) {
      const inner: unknown[] = [];
      at[0] = inner;
      at = inner;
    }
    expect(refusalOf(() => hash(deep))).toEqual(refusalOf(() => previousHash(deep)));
    expect(canonicalJson({ b: 1, a: [undefined, -0], c: undefined, '"': 2, '\u007f': 3 })).toBe(
      canonicalize({ b: 1, a: [null, 0], '"': 2, '\u007f': 3 }),
    );
  });

  it('is independent of key order', () => {
    fc.assert(
      fc.property(json, fc.nat(10), (value, seed) => {
        expect(hash(shuffleKeys(value, seed))).toBe(hash(value));
      }),
    );
  });

  it('changes when any leaf changes', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.integer(), { minKeys: 1 }), (value) => {
        const [first] = Object.keys(value);
        const changed = { ...value, [first!]: (value[first!] ?? 0) + 1 };
        expect(hash(changed)).not.toBe(hash(value));
      }),
    );
  });

  it('follows RFC 8785 canonical form', () => {
    // sha256('{"a":1,"b":[true,null,"x"]}')
    expect(hash({ b: [true, null, 'x'], a: 1.0 })).toBe(hash(JSON.parse('{"a":1,"b":[true,null,"x"]}')));
    expect(hash({ n: 1e21 })).toBe(hash({ n: 1000000000000000000000 }));
  });

  it('ignores volatile fields, nested ones too', () => {
    expect(hash({ a: 1, at: 2, m: { t: 1, k: 1 } }, ['at', 'm.t'])).toBe(
      hash({ a: 1, at: 3, m: { t: 9, k: 1 } }, ['at', 'm.t']),
    );
    expect(hash({ a: 1, m: { k: 1 } }, ['m.t'])).not.toBe(hash({ a: 1, m: { k: 2 } }, ['m.t']));
  });
});

describe('jsonText', () => {
  it('is JSON.stringify of toJsonValue, refusals and their paths alike, storable or not', () => {
    fc.assert(
      fc.property(anyValue, fc.boolean(), fc.constantFrom('', 'a\u0000b'), (value, storable, odd) => {
        const input = { [odd]: value, n: odd };
        for (const v of [value, input]) {
          const before = refusalOf(() => JSON.stringify(toJsonValue(v, { storable })));
          expect(refusalOf(() => jsonText(v, storable))).toEqual(before);
          if (before === 'ok') {
            const text = jsonText(v, storable);
            expect(text).toBe(JSON.stringify(toJsonValue(v, { storable })));
            expect(JSON.parse(text)).toEqual(toJsonValue(v, { storable }));
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('toJsonValue', () => {
  it('gives every JSON value exactly what a JSON round trip gives', () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(toJsonValue(value, { storable: false })).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  it.each([
    ['a BigInt', { n: 1n }, /BigInt/],
    ['a function', { f: () => 1 }, /functions/],
    ['a symbol', { s: Symbol('x') }, /symbols/],
    ['NaN', [Number.NaN], /not finite/],
    ['a Map', { m: new Map() }, /Map/],
    ['a Promise', Promise.resolve(1), /await/],
  ])('refuses %s with the path', (_label, value, message) => {
    expect(() => toJsonValue(value, { storable: false })).toThrow(NotJsonError);
    expect(() => toJsonValue(value, { storable: false })).toThrow(message);
  });

  it('refuses circular structures but accepts shared references', () => {
    const shared = { x: 1 };
    expect(toJsonValue({ a: shared, b: shared }, { storable: false })).toEqual({ a: { x: 1 }, b: { x: 1 } });
    const loop: { self?: unknown } = {};
    loop.self = loop;
    expect(() => toJsonValue(loop, { storable: false })).toThrow(/circular/);
  });

  it('uses toJSON and drops undefined properties like JSON.stringify', () => {
    const date = new Date('2026-01-02T03:04:05.000Z');
    expect(toJsonValue({ date, gone: undefined, list: [undefined] }, { storable: false })).toEqual({
      date: '2026-01-02T03:04:05.000Z',
      list: [null],
    });
  });

  it('writes negative zero as 0, as JSON does', () => {
    expect(Object.is((toJsonValue({ n: -0 }, { storable: false }) as { n: number }).n, 0)).toBe(true);
  });

  it('keeps a "__proto__" key as data, as JSON.parse does', () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    const copy = toJsonValue(parsed, { storable: false }) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'a']);
    expect(JSON.stringify(copy)).toBe('{"__proto__":{"polluted":true},"a":1}');
    expect(hash(parsed)).not.toBe(hash({ a: 1 }));
  });

  it('refuses strings Postgres cannot store only when asked to', () => {
    expect(toJsonValue({ s: 'a\u0000b' }, { storable: false })).toEqual({ s: 'a\u0000b' });
    expect(() => toJsonValue({ s: 'a\u0000b' }, { storable: true })).toThrow(/NUL/);
  });
});
