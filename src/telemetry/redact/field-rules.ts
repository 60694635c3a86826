/**
 * Field-name rules for structured data: a value under a matching field is replaced whole, because regexes cannot
 * recognise names, passwords or addresses without a road suffix. Field names are compared lowercased and with
 * separators removed, so `first_name`, `firstName` and `First-Name` are one rule.
 */

/** Fields whose whole value is personal data or a credential. */
const EXACT = new Set([
  'name',
  'surname',
  'dob',
  'ssn',
  'sin',
  'nin',
  'iban',
  'cvv',
  'cvc',
  'pin',
  'otp',
  'pwd',
  'plz',
  'cep',
  'zip',
  'zipcode',
  'postcode',
  'postalcode',
  'ip',
  'auth',
  'to',
  'cc',
  'bcc',
  'recipient',
  'recipients',
  'sender',
  'replyto',
  'location',
  'geo',
  'latitude',
  'longitude',
]);

/** Fragments that mark a field as sensitive wherever they occur in its name. */
const FRAGMENTS = [
  'email',
  'phone',
  'mobile',
  'fax',
  'address',
  'street',
  'birth',
  'ssn',
  'socialsecurity',
  'nationalid',
  'taxid',
  'passport',
  'driverslicense',
  'licensenumber',
  'card',
  'iban',
  'accountnumber',
  'routingnumber',
  'password',
  'passwd',
  'passphrase',
  'passcode',
  'zipcode',
  'postcode',
  'postalcode',
  'secret',
  'token',
  'apikey',
  'privatekey',
  'signingkey',
  'encryptionkey',
  'accesskey',
  'authorization',
  'credential',
  'cookie',
  'session',
  'signature',
];

/** `…name` fields that are technical rather than personal. */
const TECHNICAL_NAMES = new Set([
  'toolname',
  'filename',
  'hostname',
  'pathname',
  'typename',
  'tablename',
  'schemaname',
  'servicename',
  'eventname',
  'classname',
  'methodname',
  'functionname',
  'modelname',
  'productname',
  'planname',
  'queuename',
  'bucketname',
  'keyname',
  'fieldname',
  'tagname',
  'dbname',
  'databasename',
]);

export function normalizeFieldName(field: string): string {
  return field.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** True when a structured value stored under `field` must be replaced whole. */
export function isSensitiveField(field: string, extra: ReadonlySet<string> = EMPTY): boolean {
  const name = normalizeFieldName(field);
  if (name.length === 0) return false;
  if (EXACT.has(name) || extra.has(name)) return true;
  if (name.endsWith('name') && !TECHNICAL_NAMES.has(name)) return true;
  // billingZip, shipping_zip; gzip and unzip are switches, not places.
  if (name.endsWith('zip') && name !== 'gzip' && name !== 'unzip') return true;
  for (const fragment of FRAGMENTS) if (name.includes(fragment)) return true;
  return false;
}

const EMPTY: ReadonlySet<string> = new Set();

/** Fields that name the field beside them in a name/value pair: `{ name: 'password', value: 'hunter2' }`. */
const PAIR_LABELS = ['name', 'key', 'field', 'label', 'header', 'param', 'parameter', 'attribute', 'id'];
/** Fields that hold the value of such a pair. */
export const PAIR_VALUES: ReadonlySet<string> = new Set([
  'value',
  'values',
  'val',
  'content',
  'text',
  'data',
]);

/**
 * True when an object is a name/value pair whose name is a sensitive field (form fields, HTTP headers as
 * `[{ name, value }]`, key-value settings): its value fields are then replaced whole, like the field itself.
 */
export function isSensitivePair(
  object: Readonly<Record<string, unknown>>,
  extra: ReadonlySet<string> = EMPTY,
): boolean {
  for (const label of PAIR_LABELS) {
    const named = object[label];
    if (typeof named === 'string' && named.length <= 64 && isSensitiveField(named, extra)) return true;
  }
  return false;
}
