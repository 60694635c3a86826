// The gateway's own listing of the upstream's tools (src/gateway/tool-lookup.ts), for a call that names a tool no
// listing has shown yet. An upstream that registers tools as a session starts sends tools/list_changed just then,
// which voids a listing under way (the catalog keeps no stale facts). CI once saw the result: a read-only tool of
// the npm everything server taken for an unlisted, mutating one (KEY_REQUIRED, test/gateway/access-limits.test.ts).
// The upstream here answers tools/list from a script, so the list_changed lands inside the listing every time.
import { describe, expect, it } from 'vitest';
import { ToolCatalog } from '../../src/gateway/catalog.js';
import { ToolLookup } from '../../src/gateway/tool-lookup.js';
import type { UpstreamRequests } from '../../src/gateway/upstream.js';

const listing = {
  tools: [{ name: 'get-sum', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } }],
};

/** A lookup over an upstream whose every `tools/list` runs `answer` (told which listing it is, from 1). */
function lookupOver(answer: (list: number, catalog: ToolCatalog) => Promise<unknown>) {
  const catalog = new ToolCatalog({ keyField: 'idempotency_key', tools: {}, defaults: {}, log: () => {} });
  const logged: string[] = [];
  let lists = 0;
  const requests = { request: () => answer(++lists, catalog) } as unknown as UpstreamRequests;
  return {
    lookup: new ToolLookup(catalog, requests, (line) => logged.push(line)),
    lists: () => lists,
    logged,
  };
}

/** The first `voided` listings meet a list_changed while they are under way. */
const lookupWith = (voided: number) =>
  lookupOver(async (list, catalog) => {
    if (list <= voided) catalog.invalidate();
    return listing;
  });

describe("the gateway's tool lookup", () => {
  it('lists again when a list_changed voided its listing, and finds a read-only tool read-only', async () => {
    const { lookup, lists } = lookupWith(1);
    expect(await lookup.facts('get-sum')).toMatchObject({ name: 'get-sum', kind: 'read' });
    expect(lists()).toBe(2);
  });

  it('gives up after three voided listings, on the safe side (mutating)', async () => {
    const { lookup, lists } = lookupWith(10);
    expect(await lookup.facts('get-sum')).toMatchObject({ kind: 'mutation', keyArgument: true });
    expect(lists()).toBe(3);
  });

  it('lists once for a tool the upstream does not have, and once when the listing fails', async () => {
    const absent = lookupWith(0);
    expect(await absent.lookup.facts('nope')).toMatchObject({ kind: 'mutation' });
    expect(absent.lists()).toBe(1);

    const failing = lookupOver(async () => {
      throw new Error('upstream gone');
    });
    expect(await failing.lookup.facts('get-sum')).toMatchObject({ kind: 'mutation' });
    expect(failing.lists()).toBe(1);
    expect(failing.logged.join('\n')).toContain('could not list');
  });
});
