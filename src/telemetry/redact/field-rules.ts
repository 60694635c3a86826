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
  'secret',
  'token',
  'apikey',
  'privatekey',
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
  for (const fragment of FRAGMENTS) if (name.includes(fragment)) return true;
  return false;
}

const EMPTY: ReadonlySet<string> = new Set();
