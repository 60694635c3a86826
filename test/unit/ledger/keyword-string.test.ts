import { describe, expect, it } from 'vitest';
import { isToolLedgerError } from '../../../src/index.js';
import { parseConnectionUrl } from '../../../src/ledger/drivers/connection-url.js';
import {
  isKeywordString,
  keywordStringToUrl,
  parseKeywordString,
} from '../../../src/ledger/drivers/keyword-string.js';
import { pgConnectOptions } from '../../../src/ledger/drivers/pg-connect.js';

class FakeClient {}

describe('libpq keyword strings', () => {
  it.each([
    ['host=db port=5432 dbname=app user=u', true],
    ['  sslmode = require', true],
    ['postgres://u@db/app', false],
    ['/var/run/postgresql', false],
    ['', false],
  ])('%j is a keyword string: %s', (text, expected) => {
    expect(isKeywordString(text)).toBe(expected);
  });

  it.each([
    ['host=db dbname=app', { host: 'db', dbname: 'app' }],
    ['host = db   dbname =app', { host: 'db', dbname: 'app' }],
    ["password='a b\\'c' user=x", { password: "a b'c", user: 'x' }],
    ['password=a\\ b', { password: 'a b' }],
    ["options='-c search_path=x'", { options: '-c search_path=x' }],
    ['HOST=db', { host: 'db' }],
    ["dbname=''", { dbname: '' }],
  ])('parses %j', (text, expected) => {
    expect(Object.fromEntries(parseKeywordString(text))).toEqual(expected);
  });

  it.each([
    ["password='s3cr3t", /never closes/],
    ['host db', /no "=" after it/],
    ['host=db =x', /no keyword at character 9/],
  ])('refuses %j with CONFIG_INVALID that never echoes a value', (text, message) => {
    let caught: unknown;
    try {
      parseKeywordString(text);
    } catch (error) {
      caught = error;
    }
    expect(isToolLedgerError(caught) && caught.code).toBe('CONFIG_INVALID');
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toContain('s3cr3t');
  });

  it.each([
    ['host=db port=6432 dbname=app user=u password=p', 'postgres://u:p@db:6432/app'],
    ['host=::1 dbname=app', 'postgres://[::1]/app'],
    ['hostaddr=10.0.0.5 dbname=app', 'postgres://10.0.0.5/app'],
    ['host=/var/run/postgresql dbname=app', 'postgres:///app?host=%2Fvar%2Frun%2Fpostgresql'],
    [
      'host=a,b port=5432,5433 dbname=app target_session_attrs=read-write',
      'postgres:///app?host=a,b&port=5432,5433&target_session_attrs=read-write',
    ],
    [
      "dbname=app sslmode=require application_name='my app'",
      'postgres:///app?sslmode=require&application_name=my%20app',
    ],
    ['user=u@corp password=p/w dbname=a/b', 'postgres://u%40corp:p%2Fw@/a%2Fb'],
  ])('%j stands for %s', (text, url) => {
    expect(keywordStringToUrl(text)).toBe(url);
  });

  it('a keyword host list reaches the multi-host reader with its hosts, ports and target', () => {
    const url = keywordStringToUrl('host=a,b port=5432,5433 dbname=app user=u target_session_attrs=primary');
    const parsed = parseConnectionUrl(url, {});
    expect(parsed.hosts).toEqual([
      { host: 'a', port: 5432 },
      { host: 'b', port: 5433 },
    ]);
    expect(parsed).toMatchObject({ user: 'u', database: 'app', targetSessionAttrs: 'primary' });
  });

  it('pgConnectOptions hands pg the URL, since pg would read the keywords as a database name', () => {
    expect(pgConnectOptions(FakeClient, 'host=db port=5433 dbname=app', 1000, {})).toEqual({
      connectionString: 'postgres://db:5433/app',
      connectionTimeoutMillis: 1000,
    });
    const many = pgConnectOptions(FakeClient, 'host=a,b dbname=app', 1000, {});
    expect(many.Client).toBeDefined();
    expect(many.connectionTimeoutMillis).toBe(3000);
  });
});
