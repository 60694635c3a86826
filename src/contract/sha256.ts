import * as crypto from 'node:crypto';

type OneShot = (algorithm: string, data: string, encoding: 'hex') => string;

// `crypto.hash` (Node 20.12 and later) hashes a short string in a third of the time `createHash` takes, which
// builds a Hash object per call. Read off the namespace: a named import would fail to link on older Node 20.
const oneShot = (crypto as unknown as { hash?: OneShot }).hash;

/** SHA-256 of a string's UTF-8 bytes, as lowercase hex. */
export const sha256Hex: (text: string) => string =
  typeof oneShot === 'function'
    ? (text) => oneShot('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text, 'utf8').digest('hex');
