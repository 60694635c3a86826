import { MAX_JSON_DEPTH, NotJsonError, refusalOf, viaToJson } from './json.js';

/**
 * Fields left out of the canonical text, as a tree of property names: `true` drops the field, a subtree descends
 * into it (through objects only, never arrays).
 */
export type OmitTree = ReadonlyMap<string, OmitTree | true>;

/** Builds the tree for dotted paths such as `['at', 'meta.requestId']`. A path dropped whole wins over its children. */
export function omitTreeOf(paths: readonly string[]): OmitTree | undefined {
  if (paths.length === 0) return undefined;
  const root = new Map<string, Map<string, unknown> | true>();
  for (const path of paths) {
    const segments = path.split('.');
    let node = root;
    for (const [index, segment] of segments.entries()) {
      const existing = node.get(segment);
      if (existing === true) break;
      if (index === segments.length - 1) {
        node.set(segment, true);
        break;
      }
      const child = existing ?? new Map();
      node.set(segment, child);
      node = child as typeof root;
    }
  }
  return root as OmitTree;
}

/** The location of a value as the walk's stack of indexes and names, made into a string only for an error. */
function pathOf(stack: readonly (string | number)[]): string {
  let path = '$';
  for (const segment of stack) path += typeof segment === 'number' ? `[${segment}]` : `.${segment}`;
  return path;
}

/** Names longer than this are quoted each time rather than kept: the cache is for the few names a tool repeats. */
const MAX_CACHED_NAME_LENGTH = 64;
const MAX_CACHED_NAMES = 4096;
const quotedNames = new Map<string, string>();

/** `JSON.stringify(name)`, remembered: a tool's inputs and results repeat the same property names every call. */
function quotedName(name: string): string {
  let quoted = quotedNames.get(name);
  if (quoted === undefined) {
    quoted = JSON.stringify(name);
    if (name.length <= MAX_CACHED_NAME_LENGTH) {
      if (quotedNames.size >= MAX_CACHED_NAMES) quotedNames.clear();
      quotedNames.set(name, quoted);
    }
  }
  return quoted;
}

/**
 * Sorts names and their texts together by the names' UTF-16 code units, as `<` compares them (RFC 8785 sorts the
 * raw names, not their escaped JSON forms). Insertion sort: objects have few members, and it needs no comparator
 * calls or pair arrays.
 */
function sortMembers(names: string[], texts: string[]): void {
  for (let i = 1; i < names.length; i++) {
    const name = names[i]!;
    const text = texts[i]!;
    let j = i - 1;
    while (j >= 0 && names[j]! > name) {
      names[j + 1] = names[j]!;
      texts[j + 1] = texts[j]!;
      j--;
    }
    names[j + 1] = name;
    texts[j + 1] = text;
  }
}

/**
 * The RFC 8785 canonical JSON text of a value, read with the rules of `toJsonValue(value, { storable: false })` in
 * the same single walk: `toJSON`, undefined properties dropped (null in arrays), and the same refusals with the same
 * paths, in the same order. Fields in `omit` are checked but left out. Byte for byte the text `canonicalize` gives
 * for the converted value, so hashes stored before this walk existed still match (test/unit/fingerprint.test.ts).
 */
export function canonicalJson(value: unknown, omit?: OmitTree): string {
  return jsonWalk(value, omit, true, false);
}

/**
 * `JSON.stringify(toJsonValue(value, { storable }))` in one walk (keys in their own order), refusing what
 * `toJsonValue` refuses, with the same paths. For a handler's result: the stored text, and `JSON.parse` of it is
 * the value a replay returns.
 */
export function jsonText(value: unknown, storable: boolean): string {
  return jsonWalk(value, undefined, false, storable);
}

function jsonWalk(value: unknown, omit: OmitTree | undefined, sorted: boolean, storable: boolean): string {
  const ancestors: object[] = [];
  // Where the walk is: pushed before a child, popped after it; a refusal ends the walk, so nothing pops then.
  const stack: (string | number)[] = [];

  const walk = (input: unknown, key: string, omitHere: OmitTree | undefined): string | undefined => {
    if (ancestors.length >= MAX_JSON_DEPTH) {
      throw new NotJsonError(pathOf(stack), `nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const current = viaToJson(input, key);
    const refused = refusalOf(current, storable);
    if (refused) throw new NotJsonError(pathOf(stack), refused);
    switch (typeof current) {
      case 'undefined':
        return undefined;
      case 'boolean':
        return current ? 'true' : 'false';
      case 'string':
        return JSON.stringify(current);
      case 'number':
        // Finite (refused otherwise): the ECMAScript form, which is JSON's and RFC 8785's; -0 prints as 0.
        return String(current);
    }
    if (current === null || typeof current !== 'object') return 'null';
    const object = current;
    if (ancestors.includes(object)) throw new NotJsonError(pathOf(stack), 'circular reference');
    ancestors.push(object);
    try {
      if (Array.isArray(object)) {
        let text = '[';
        for (let index = 0; index < object.length; index++) {
          stack.push(index);
          const item = walk(object[index], String(index), undefined);
          stack.pop();
          text += `${index === 0 ? '' : ','}${item ?? 'null'}`;
        }
        return `${text}]`;
      }
      // Checked in the order `toJsonValue` walks, so the first refusal is the same one; sorted afterwards.
      const names: string[] = [];
      const texts: string[] = [];
      for (const k of Object.keys(object)) {
        stack.push(k);
        if (!k.isWellFormed() || (storable && k.includes('\u0000'))) {
          throw new NotJsonError(pathOf(stack), 'property name cannot be stored');
        }
        const rule = omitHere?.get(k);
        const text = walk((object as Record<string, unknown>)[k], k, rule === true ? undefined : rule);
        stack.pop();
        if (text !== undefined && rule !== true) {
          names.push(k);
          texts.push(text);
        }
      }
      if (sorted) sortMembers(names, texts);
      let text = '{';
      for (let i = 0; i < names.length; i++) {
        text += `${i === 0 ? '' : ','}${quotedName(names[i]!)}:${texts[i]!}`;
      }
      return `${text}}`;
    } finally {
      ancestors.pop();
    }
  };

  return walk(value, '', omit) ?? 'null';
}
