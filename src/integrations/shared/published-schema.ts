import * as z from 'zod/v4-mini';
import type { JsonSchema } from './json-schema.js';

/**
 * A zod object for SDKs that take zod and both publish and validate from it (McpServer 1.x, LangChain tools).
 * McpServer 1.x derives both the published JSON Schema and its own
 * argument validation from one zod object. This one accepts any object unchanged, and carries the tool's real
 * JSON Schema as registry metadata, which zod merges into the schema it publishes. So clients see the exact
 * schema, while validation stays with the ledger tool: raw arguments reach it (no double parse of transforms),
 * and a missing key or bad argument comes back with its stable code rather than as the SDK's generic error.
 */
export function publishedSchema(jsonSchema: JsonSchema): z.ZodMiniObject {
  const carrier = z.looseObject({});
  z.globalRegistry.add(carrier, jsonSchema as z.core.GlobalMeta);
  return carrier;
}
