import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parameterHash } from '../../src/contract/fingerprint.js';
import { NotJsonError, toJsonValue } from '../../src/contract/json.js';

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

const hash = (value: unknown, volatile: string[] = []) =>
  parameterHash(toJsonValue(value, { storable: false }), volatile);

describe('parameter hash', () => {
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
