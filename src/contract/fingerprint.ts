import { canonicalJson, type OmitTree } from './canonical-json.js';
import { sha256Hex } from './sha256.js';

/**
 * SHA-256 (hex) of the RFC 8785 canonical JSON of a tool's validated input, without its volatile fields (see
 * `omitTreeOf`). Key order and whitespace never change the hash; the idempotency key is not part of it. Throws
 * `NotJsonError` for input that is not JSON, with the rules and paths of `toJsonValue`.
 */
export function parameterHash(input: unknown, volatile?: OmitTree): string {
  return sha256Hex(canonicalJson(input, volatile));
}
