import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addToSlots, KeyedSlots, removeFromSlots, type Slotted } from '../../src/contract/slots.js';

// The slot lists that the leases, the first saves in flight and the claimed runs live in (src/contract/slots.ts),
// checked against the Set and Map they replace, over random sequences of adds and removes.

interface Item extends Slotted {
  readonly id: number;
}

describe('slot lists', () => {
  it('hold what a Set would, each item knowing its index, over any adds and removes', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const) }),
      fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const list: Item[] = [];
        const model = new Set<Item>();
        const made: Item[] = [];
        for (const step of ops) {
          if (step.kind === 'add') {
            const item: Item = { id: made.length, slot: -1 };
            made.push(item);
            addToSlots(list, item);
            model.add(item);
          } else if (made.length > 0) {
            // Any item ever made, so removing one twice (or one never added again) is tried too.
            const item = made[step.pick % made.length]!;
            expect(removeFromSlots(list, item)).toBe(model.delete(item));
            expect(item.slot).toBe(-1);
          }
          expect(new Set(list)).toEqual(model);
          expect(list.map((item) => item.slot)).toEqual(list.map((_, index) => index));
        }
      }),
    );
  });

  it('do not remove an item that sits in another list', () => {
    const a: Item[] = [];
    const b: Item[] = [];
    const first: Item = { id: 1, slot: -1 };
    const second: Item = { id: 2, slot: -1 };
    addToSlots(a, first);
    addToSlots(b, second);
    expect(removeFromSlots(b, first)).toBe(false);
    expect(b).toEqual([second]);
    expect(a).toEqual([first]);
  });
});

describe('KeyedSlots', () => {
  it('answers as a Map would, over any sets, gets, deletes and conditional deletes, keys sharing buckets included', () => {
    // A small alphabet and lengths make many keys repeat; 600 distinct keys put several in each of 256 buckets.
    const key = fc.oneof(
      fc.string({ unit: fc.constantFrom('a', 'b', '\u0000', 'é'), maxLength: 6 }),
      fc.nat(600).map(String),
    );
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key, value: fc.integer() }),
      fc.record({ kind: fc.constant('get' as const), key }),
      fc.record({ kind: fc.constant('delete' as const), key }),
      fc.record({ kind: fc.constant('deleteAny' as const), key }),
      fc.record({ kind: fc.constant('take' as const), key }),
      // `same`: the value the key holds now (when it holds one), else another.
      fc.record({ kind: fc.constant('deleteIf' as const), key, same: fc.boolean(), value: fc.integer() }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const slots = new KeyedSlots<number>();
        const model = new Map<string, number>();
        for (const step of ops) {
          if (step.kind === 'set') {
            slots.set(step.key, step.value);
            model.set(step.key, step.value);
          } else if (step.kind === 'delete') {
            expect(slots.delete(step.key)).toBe(model.delete(step.key));
          } else if (step.kind === 'take') {
            expect(slots.take(step.key)).toBe(model.get(step.key));
            model.delete(step.key);
          } else if (step.kind === 'deleteIf') {
            const value = step.same && model.has(step.key) ? model.get(step.key)! : step.value;
            const held = model.has(step.key) && model.get(step.key) === value;
            expect(slots.deleteIf(step.key, value)).toBe(held);
            if (held) model.delete(step.key);
          } else if (step.kind === 'deleteAny') {
            // Some key goes, whichever: the model drops the one the table no longer has.
            expect(slots.deleteAny()).toBe(model.size > 0);
            const gone = [...model.keys()].filter((k) => !slots.has(k));
            expect(gone.length).toBe(model.size > slots.size ? 1 : 0);
            for (const k of gone) model.delete(k);
          }
          expect(slots.get(step.key)).toBe(model.get(step.key));
          expect(slots.has(step.key)).toBe(model.has(step.key));
          expect(slots.size).toBe(model.size);
        }
        for (const [k, v] of model) expect(slots.get(k)).toBe(v);
      }),
    );
  });
});
