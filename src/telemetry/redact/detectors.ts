import { isChineseId, isFrenchNir, isIban, isIp, isSpanishId, luhn } from './checks.js';
import { CONTEXTUAL, IDENTIFIERS } from './contextual-detectors.js';

import {
  cardWindows,
  compact,
  type Detector,
  digitsOf,
  group,
  LABEL,
  LABEL_FILLER,
  re,
  whole,
} from './detector.js';
import { isSensitiveField } from './field-rules.js';

/** Secrets and data whose format alone identifies them. They run first: identifiers never shield them. */
const CERTAIN: readonly Detector[] = [
  {
    name: 'private key block',
    pattern: re(
      '-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\\s]{0,16384}(?:-----END[A-Z ]{0,40}PRIVATE KEY-----)?',
    ),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'JWT',
    pattern: re('(?<![\\w-])eyJ[\\w-]{5,4096}\\.[\\w-]{5,4096}\\.[\\w-]{0,4096}'),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'bearer credentials',
    pattern: re(
      '(?<![\\p{L}\\p{N}])(?:Bearer|Basic|Digest|Token)\\s{1,4}([A-Za-z0-9\\-._~+/]{8,4096}=*)',
      'i',
    ),
    judge: group(1, LABEL.SECRET, (m) => /[\d=+/_-]/.test(m[1] ?? '') || (m[1]?.length ?? 0) >= 20),
  },
  {
    name: 'API key prefixes',
    pattern: re(
      '(?<![A-Za-z0-9-])(?:sk-(?:proj-|ant-|svcacct-|admin-)?[\\w-]{16,512}|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,256}|whsec_[A-Za-z0-9+/=]{16,128}|gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_\\w{20,255}|xox[abprs]-[\\w-]{10,255}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[\\w-]{35}|glpat-[\\w-]{20,64}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,64}|SG\\.[\\w-]{16,64}\\.[\\w-]{16,128})',
    ),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'credentials in a URL',
    pattern: re('(?<=://)[^\\s/@:]{1,256}:[^\\s/@]{1,256}(?=@)'),
    judge: whole(LABEL.SECRET),
  },
  {
    name: 'email',
    pattern: re(
      "(?<![\\p{L}\\p{N}\\p{M}._%+\\-'])[\\p{L}\\p{N}\\p{M}._%+\\-']{1,64}(?:@|%40|\\s?\\[at\\]\\s?|\\s\\(at\\)\\s)[\\p{L}\\p{N}\\p{M}-]{1,63}(?:\\.[\\p{L}\\p{N}\\p{M}-]{1,63}){1,8}",
      'i',
    ),
    judge: whole(LABEL.EMAIL, (text) => /[\p{L}\p{M}]{2,}$/u.test(text)),
  },
  {
    name: 'Postgres key detail',
    pattern: re(
      'Key \\(([^()]{1,512})\\)=\\(([^\\n]{0,4096}?)\\)(?= already exists| is not present| is still referenced|\\.|$)',
    ),
    judge: group(2, LABEL.REDACTED),
  },
  {
    name: 'Postgres failing row',
    pattern: re('Failing row contains \\(([^\\n]{0,4096})\\)'),
    judge: group(1, LABEL.REDACTED),
  },
  {
    name: 'sensitive field = value',
    // Also JSON inside a JSON string, where the quotes arrive escaped: {\"password\":\"hunter2\"}.
    pattern: re(
      '(?<![\\p{L}\\p{N}_.\\-])([\\p{L}_][\\p{L}\\p{N}_.\\-]{0,63})((?:\\\\{1,3})?["\']?\\s{0,3}[:=]\\s{0,3})(\\\\{1,3}"[^"\\n]{0,4096}?\\\\{1,3}"|"[^"\\n]{0,4096}"|\'[^\'\\n]{0,4096}\'|[^\\s&,;)}\\]"\']{1,4096})',
    ),
    judge: group(3, LABEL.REDACTED, (m) => isSensitiveField(m[1] ?? '')),
  },
  {
    name: 'sensitive name/value pair',
    // [{"name":"password","value":"hunter2"}] serialized into a string (escaped or not): the value is named by
    // the field beside it, as in the structured rule for pairs.
    pattern: re(
      '(\\\\{0,3}")(?:name|key|field|label|header|param|parameter|attribute|id)\\1\\s{0,3}:\\s{0,3}\\1([^"\\\\\\n]{1,64})\\1\\s{0,3},\\s{0,3}\\1(?:value|values|val|content|text|data)\\1\\s{0,3}:\\s{0,3}(\\1[^"\\n]{0,4096}?\\1|[^\\s,}\\]]{1,4096})',
    ),
    judge: group(3, LABEL.REDACTED, (m) => isSensitiveField(m[2] ?? '')),
  },
  {
    name: 'credential in words',
    pattern: re(
      `(?<![\\p{L}])(?:password|passphrase|passwd|pwd|passcode|pin|otp|secret|api[\\s_-]?key|access[\\s_-]?key|secret[\\s_-]?key|signing[\\s_-]?key|token)(?:\\s{1,3}${LABEL_FILLER}){0,2}(\\s{0,3}[:=]\\s{0,3}|\\s{1,3}(?:(?:is|was|of)\\s{1,3})?)([^\\s,;)]{4,512})`,
      'i',
    ),
    judge: group(2, LABEL.SECRET, (m) => {
      // "password: x", "password is x", or "api key 9f2c…": a bare value needs a digit or a symbol.
      return /[:=]|\s(?:is|was|of)\s/i.test(m[1] ?? '') || /[\d_\-+/=!@#$%^&*]/.test(m[2] ?? '');
    }),
  },
  {
    name: 'passport number',
    pattern: re(
      `(?<![\\p{L}])passport(?:\\s{1,3}${LABEL_FILLER}|\\s{0,3}#){0,2}(?:\\s{0,3}[:#=]|\\s{1,3}(?:is|was))?\\s{0,3}([A-Z0-9]{6,12})(?![\\p{L}\\p{N}])`,
      'i',
    ),
    judge: group(1, LABEL.NATIONAL_ID, (m) => /\d/.test(m[1] ?? '')),
  },
  {
    name: 'IBAN',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{2}\\d{2}(?: ?[A-Z0-9]){11,30}(?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.IBAN, (text) => isIban(compact(text))),
  },
  {
    name: 'card number',
    pattern: re('(?<!\\p{N})(?:\\d[ .\\-]{0,2}){12,18}\\d(?!\\p{N})'),
    judge: cardWindows,
  },
  {
    name: 'IPv4',
    pattern: re('(?<![\\p{N}.])(?:\\d{1,3}\\.){3}\\d{1,3}(?![\\p{N}]|\\.\\p{N})'),
    judge: whole(LABEL.IP, isIp),
  },
  {
    name: 'IPv6',
    pattern: re(
      '(?<![\\p{L}\\p{N}:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|(?:\\d{1,3}\\.){3}\\d{1,3})(?:%[\\w.]{1,32})?(?![\\p{L}\\p{N}:])',
    ),
    judge: whole(LABEL.IP, isIp),
  },
  {
    name: 'US social security number',
    pattern: re('(?<![\\p{N}\\-])\\d{3}([- ])\\d{2}\\1\\d{4}(?![\\p{N}\\-])'),
    judge: whole(LABEL.NATIONAL_ID, (text) => !/^(?:000|666|9)/.test(text)),
  },
  {
    name: 'UK National Insurance number',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{2} ?\\d{2} ?\\d{2} ?\\d{2} ?[A-D](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Brazilian CPF',
    pattern: re('(?<![\\p{N}.])\\d{3}\\.\\d{3}\\.\\d{3}-\\d{2}(?!\\p{N})'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Spanish DNI/NIE',
    pattern: re('(?<![\\p{L}\\p{N}])[XYZ]?\\d{7,8}-?[A-Z](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID, (text) => isSpanishId(compact(text))),
  },
  {
    name: 'Chinese resident id',
    pattern: re('(?<![\\p{L}\\p{N}])\\d{17}[\\dX](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID, isChineseId),
  },
  {
    name: 'French NIR',
    pattern: re('(?<![\\p{L}\\p{N}])[12] ?\\d{2} ?\\d{2} ?\\d{2} ?\\d{3} ?\\d{3} ?\\d{2}(?![\\p{L}\\p{N}])'),
    judge: whole(LABEL.NATIONAL_ID, (text) => isFrenchNir(digitsOf(text))),
  },
  {
    name: 'Indian Aadhaar',
    pattern: re('(?<![\\p{N}])[2-9]\\d{3} \\d{4} \\d{4}(?![\\p{N}])'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Indian PAN',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{3}[PCHFATBLJG][A-Z]\\d{4}[A-Z](?![\\p{L}\\p{N}])'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Italian codice fiscale',
    pattern: re('(?<![\\p{L}\\p{N}])[A-Z]{6}\\d{2}[A-EHLMPR-T]\\d{2}[A-Z]\\d{3}[A-Z](?![\\p{L}\\p{N}])', 'i'),
    judge: whole(LABEL.NATIONAL_ID),
  },
  {
    name: 'Canadian SIN',
    pattern: re('(?<![\\p{N}\\-])\\d{3}([ -])\\d{3}\\1\\d{3}(?![\\p{N}\\-])'),
    judge: whole(LABEL.NATIONAL_ID, (text) => luhn(digitsOf(text))),
  },
];

export const DETECTORS: readonly Detector[] = [...CERTAIN, ...IDENTIFIERS, ...CONTEXTUAL];
