import * as z from 'zod/v4-mini';
import type { JsonSchema } from './json-schema.js';

type Target = NonNullable<Parameters<typeof z.toJSONSchema>[1]>['target'];

/**
 * A zod object for SDKs that take zod and both publish and validate from it (McpServer 1.x and 2.x, LangChain
 * tools). McpServer derives both the published JSON Schema and its own
 * argument validation from one zod object. This one accepts any object unchanged, and carries the tool's real
 * JSON Schema as registry metadata, which zod merges into the schema it publishes. So clients see the exact
 * schema, while validation stays with the ledger tool: raw arguments reach it (no double parse of transforms),
 * and a missing key or bad argument comes back with its stable code rather than as the SDK's generic error.
 */
export function publishedSchema(jsonSchema: JsonSchema): z.ZodMiniObject {
  const carrier = z.looseObject({});
  z.globalRegistry.add(carrier, jsonSchema as z.core.GlobalMeta);
  // zod/mini objects lack the Standard JSON Schema interface (`~standard.jsonSchema`) that classic zod 4.2+ has;
  // McpServer 2.x then warns "Your zod version does not implement ~standard.jsonSchema" and converts with
  // z.toJSONSchema() itself. Giving the carrier the interface, with that same conversion, publishes the same schema
  // without the warning.
  const convert =
    (io: 'input' | 'output') =>
    (params?: { readonly target?: string }): Record<string, unknown> =>
      z.toJSONSchema(carrier, {
        ...(params?.target === undefined ? {} : { target: params.target as Target }),
        io,
      }) as Record<string, unknown>;
  Object.defineProperty(carrier, '~standard', {
    value: { ...carrier['~standard'], jsonSchema: { input: convert('input'), output: convert('output') } },
    enumerable: false,
    configurable: true,
    writable: true,
  });
  return carrier;
}
