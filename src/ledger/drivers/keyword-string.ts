import { ToolLedgerError } from '../../contract/errors.js';

/**
 * libpq keyword/value connection strings (`host=db-a,db-b port=5432 dbname=app user=app`), which pg 8.x does not
 * read: its parser hands them to WHATWG `URL` against a dummy base and connects to a host named "base" with the
 * whole string as the database name. They are turned into the equivalent URL here, so a keyword string reaches the
 * same hosts, database and parameters, a host list and `target_session_attrs` included.
 *
 * Syntax, as libpq documents it: `keyword = value` pairs separated by white space; a value is either written
 * without spaces or single-quoted, and a backslash escapes the next character in both (`'it\'s'`).
 */

const KEYWORD_PAIR = /^\s*[A-Za-z_][A-Za-z0-9_]*\s*=/;

/** Whether a connection string is in keyword form (starts with `keyword=`), not a URL or a socket path. */
export function isKeywordString(text: string): boolean {
  return KEYWORD_PAIR.test(text);
}

function invalid(message: string): ToolLedgerError {
  return new ToolLedgerError('CONFIG_INVALID', message);
}

/** The pairs of a keyword string, values unquoted and unescaped. Throws `CONFIG_INVALID`, never echoing a value. */
export function parseKeywordString(text: string): ReadonlyMap<string, string> {
  const pairs = new Map<string, string>();
  let i = 0;
  const skipSpace = (): void => {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
  };
  for (let count = 0; count <= text.length; count++) {
    skipSpace();
    if (i >= text.length) return pairs;
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))?.[0];
    if (name === undefined) {
      throw invalid(`The connection string has no keyword at character ${i + 1}; write keyword=value pairs.`);
    }
    i += name.length;
    skipSpace();
    if (text[i] !== '=')
      throw invalid(`The connection string's "${name}" has no "=" after it; write ${name}=value.`);
    i++;
    skipSpace();
    let value = '';
    if (text[i] === "'") {
      i++;
      for (;;) {
        if (i >= text.length) {
          throw invalid(
            `The connection string's "${name}" value opens a quote that never closes; add the closing '.`,
          );
        }
        const c = text[i++] as string;
        if (c === "'") break;
        value += c === '\\' && i < text.length ? (text[i++] as string) : c;
      }
    } else {
      while (i < text.length && !/\s/.test(text[i] as string)) {
        const c = text[i++] as string;
        value += c === '\\' && i < text.length ? (text[i++] as string) : c;
      }
    }
    pairs.set(name.toLowerCase(), value);
  }
  return pairs;
}

/**
 * The URL a keyword string stands for: user and password in the authority, the database as the path, one TCP host
 * in the authority, and a host list or a socket directory as `host=`/`port=` parameters (which both pg's parser and
 * the multi-host reader take); every other keyword becomes a query parameter of the same name.
 */
export function keywordStringToUrl(text: string): string {
  const pairs = new Map(parseKeywordString(text));
  const take = (name: string): string | undefined => {
    const value = pairs.get(name);
    pairs.delete(name);
    return value === '' ? undefined : value;
  };
  const user = take('user');
  const password = take('password');
  const database = take('dbname');
  const hostaddr = take('hostaddr');
  const host = take('host') ?? hostaddr;
  const port = take('port');
  const query: string[] = [];
  let authority = '';
  const oneTcpHost = host !== undefined && !host.includes(',') && !host.startsWith('/');
  if (oneTcpHost && (port === undefined || !port.includes(','))) {
    authority = `${host.includes(':') ? `[${host}]` : encodeURIComponent(host)}${port === undefined ? '' : `:${port}`}`;
  } else {
    if (host !== undefined) query.push(`host=${encodeURIComponent(host).replace(/%2C/gi, ',')}`);
    if (port !== undefined) query.push(`port=${encodeURIComponent(port).replace(/%2C/gi, ',')}`);
  }
  for (const [name, value] of pairs) query.push(`${name}=${encodeURIComponent(value)}`);
  const userinfo =
    user === undefined && password === undefined
      ? ''
      : `${encodeURIComponent(user ?? '')}${password === undefined ? '' : `:${encodeURIComponent(password)}`}@`;
  const path = database === undefined ? '/' : `/${encodeURIComponent(database)}`;
  return `postgres://${userinfo}${authority}${path}${query.length > 0 ? `?${query.join('&')}` : ''}`;
}
