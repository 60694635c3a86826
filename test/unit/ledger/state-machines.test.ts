import { describe, expect, it } from 'vitest';
import { POOLER_EVENTS, POOLER_STATES, POOLER_TRANSITIONS } from '../../../src/ledger/drivers/pg/pooler.js';
import {
  RESERVED_EVENTS,
  RESERVED_STATES,
  RESERVED_TRANSITIONS,
} from '../../../src/ledger/drivers/pg/reserved.js';

/**
 * The transition tables themselves, cell by cell, against a spec written as lines of `state event next`: every
 * move a table allows is listed, and every cell the spec leaves out must be refused (`undefined`: the code throws a
 * "tool-ledger bug" error on it). A change to a table shows here as a line.
 */
type Table = Readonly<Record<string, Readonly<Record<string, string | readonly string[] | undefined>>>>;

function allowedMoves(table: Table): string[] {
  return Object.entries(table).flatMap(([state, row]) =>
    Object.entries(row).flatMap(([event, next]) =>
      next === undefined ? [] : [next].flat().map((to) => `${state} ${event} ${to}`),
    ),
  );
}

function refusedCells(table: Table): string[] {
  return Object.entries(table).flatMap(([state, row]) =>
    Object.entries(row).flatMap(([event, next]) => (next === undefined ? [`${state} ${event}`] : [])),
  );
}

const lines = (spec: string) =>
  spec
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).join(' '));

function describeMachine(
  name: string,
  table: Table,
  states: readonly string[],
  events: readonly string[],
  spec: { allowed: string; refused: string },
) {
  describe(name, () => {
    it('has a row for every state and a cell for every event', () => {
      expect(Object.keys(table).sort()).toEqual([...states].sort());
      for (const state of states) expect(Object.keys(table[state]!).sort()).toEqual([...events].sort());
    });

    it.each(lines(spec.allowed))('allows %s', (move) => {
      expect(allowedMoves(table)).toContain(move);
    });

    it.each(lines(spec.refused))('refuses %s', (cell) => {
      expect(refusedCells(table)).toContain(cell);
    });

    it('allows nothing the spec does not list, and refuses nothing it does not', () => {
      expect(allowedMoves(table).sort()).toEqual(lines(spec.allowed).sort());
      expect(refusedCells(table).sort()).toEqual(lines(spec.refused).sort());
    });
  });
}

describeMachine(
  'RESERVED_TRANSITIONS (the reserved connection)',
  RESERVED_TRANSITIONS,
  RESERVED_STATES,
  RESERVED_EVENTS,
  {
    allowed: `
      idle     need    opening
      idle     close   closed
      opening  need    opening
      opening  opened  open
      opening  failed  backoff
      opening  failed  idle
      opening  close   closed
      open     need    open
      open     lost    opening
      open     lost    idle
      open     close   closed
      backoff  need    opening
      backoff  retry   opening
      backoff  close   closed
      closed   need    closed
      closed   close   closed`,
    // Opened or failed without opening, lost without being open, a retry outside backoff, anything after closing.
    refused: `
      idle     opened
      idle     failed
      idle     lost
      idle     retry
      opening  lost
      opening  retry
      open     opened
      open     failed
      open     retry
      backoff  opened
      backoff  failed
      backoff  lost
      closed   opened
      closed   failed
      closed   lost
      closed   retry`,
  },
);

describeMachine(
  'POOLER_TRANSITIONS (the pooler detector)',
  POOLER_TRANSITIONS,
  POOLER_STATES,
  POOLER_EVENTS,
  {
    // Evidence of a pooler is final: nothing leads out of present.
    allowed: `
    unknown  probed_clean  absent
    unknown  found         present
    absent   found         present
    present  probed_clean  present
    present  found         present`,
    // Only an unknown state is probed: a second clean probe is a bug.
    refused: `
    absent   probed_clean`,
  },
);
