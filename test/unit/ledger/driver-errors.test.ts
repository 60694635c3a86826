import { describe, expect, it } from 'vitest';
import { ToolLedgerError } from '../../../src/contract/errors.js';
import { classifyDriverError, ledgerUnavailable } from '../../../src/ledger/driver-errors.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('driver error classification', () => {
  it.each([
    ['admin shutdown', withCode('terminating connection due to administrator command', '57P01'), true, false],
    [
      'crash shutdown',
      withCode('terminating connection because of crash of another server process', '57P02'),
      true,
      false,
    ],
    ['cannot connect now', withCode('the database system is shutting down', '57P03'), true, false],
    ['too many connections', withCode('sorry, too many clients already', '53300'), true, false],
    ['serialization failure', withCode('could not serialize access', '40001'), true, false],
    ['deadlock', withCode('deadlock detected', '40P01'), true, false],
    ['statement timeout', withCode('canceling statement due to statement timeout', '57014'), true, false],
    ['connection exception class', withCode('connection failure', '08006'), true, true],
    ['ECONNRESET', withCode('read ECONNRESET', 'ECONNRESET'), true, true],
    ['ECONNREFUSED', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), true, false],
    ['ETIMEDOUT', withCode('connect ETIMEDOUT', 'ETIMEDOUT'), true, true],
    ['EPIPE', withCode('write EPIPE', 'EPIPE'), true, true],
    ['pg connection terminated', new Error('Connection terminated unexpectedly'), true, true],
    ['pg connect timeout', new Error('timeout exceeded when trying to connect'), true, false],
    [
      'pg broken client',
      new Error('Client has encountered a connection error and is not queryable'),
      true,
      true,
    ],
    ['pg query timeout', new Error('Query read timeout'), true, true],
    ['undefined table', withCode('relation "x.tool_runs" does not exist', '42P01'), false, false],
    ['permission denied', withCode('permission denied for schema x', '42501'), false, false],
    ['missing schema', withCode('schema "x" does not exist', '3F000'), false, false],
    ['syntax error class', withCode('syntax error at or near', '42601'), false, false],
    ['bad password', withCode('password authentication failed', '28P01'), false, false],
    ['unknown database', withCode('database "nope" does not exist', '3D000'), false, false],
    ['unknown error', new Error('something odd'), false, false],
  ])('%s', (_name, error, retryable, outcomeUnknown) => {
    expect(classifyDriverError(error)).toMatchObject({ retryable, outcomeUnknown });
    const wrapped = ledgerUnavailable(error, 'claim the idempotency key');
    expect(wrapped).toBeInstanceOf(ToolLedgerError);
    expect(wrapped).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable, cause: error });
    expect(wrapped.message).toMatch(
      retryable ? /retry with the same idempotency key/ : /Retrying will not help/,
    );
  });

  it.each([
    ['42P01', /migrate: true|migrationSql/],
    ['42501', /GRANT/],
    ['3F000', /migrate: true|migrationSql/],
    ['28P01', /credentials/],
  ])('says what to fix for %s', (code, fix) => {
    expect(ledgerUnavailable(withCode('refused', code), 'claim').message).toMatch(fix);
  });

  it('says why a retryable failure happened when it knows more than "unreachable or busy"', () => {
    for (const code of ['40001', '40P01']) {
      expect(ledgerUnavailable(withCode('could not serialize', code), 'claim').message).toMatch(
        /Another session changed the same rows.*nothing of it was saved; retry with the same idempotency key/,
      );
    }
    expect(ledgerUnavailable(withCode('reset', 'ECONNRESET'), 'claim').message).toMatch(
      /unreachable or busy; retry with the same idempotency key/,
    );
  });

  it.each([
    'non-IMMUTABLE functions are not allowed in CASE or COALESCE statements',
    'could not create distributed plan',
    'functions used in the DO UPDATE SET clause of INSERTs on distributed tables must be marked IMMUTABLE',
    'STABLE functions used in UPDATE queries cannot be called with column references',
    "Router planner doesn't support VOLATILE functions in common table expressions.",
  ])(
    "tells Citus's refusal %j apart from a server too old, and says to distribute through the ledger",
    (text) => {
      const error = ledgerUnavailable(withCode(text, '0A000'), 'record the result');
      expect(error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: false });
      expect(error.message).toMatch(/Citus refused a ledger statement.*tool-ledger migrate --distribute/);
      expect(error.message).not.toMatch(/PostgreSQL 13 or later|preparedStatements/);
    },
  );

  it("keeps the old advice for PostgreSQL's own feature refusals", () => {
    expect(ledgerUnavailable(withCode('MERGE is not supported', '0A000'), 'claim').message).toMatch(
      /PostgreSQL 13 or later/,
    );
  });

  it('says a Citus worker was lost when the coordinator reports it, retryable, outcome unknown', () => {
    const lost = withCode(
      'connection to the remote node postgres@10.0.0.7:5432 failed with the following error: Connection refused',
      '08006',
    );
    expect(classifyDriverError(lost)).toMatchObject({ retryable: true, outcomeUnknown: true });
    expect(ledgerUnavailable(lost, 'claim the idempotency key').message).toMatch(
      /could not reach the worker that holds this tenant's shard.*tenants on other workers are not affected; retry with the same idempotency key/,
    );
  });

  it('keeps a ToolLedgerError as it is', () => {
    const original = new ToolLedgerError('LEASE_LOST', 'lost');
    expect(ledgerUnavailable(original, 'claim')).toBe(original);
  });
});
