import type { StandardSchemaV1 } from '@standard-schema/spec';
import * as z from 'zod/v4-mini';
import { ToolLedgerError } from '../../contract/errors.js';

type JsonSchema = Record<string, unknown>;

interface JsonSchemaCapable {
  readonly '~standard': {
    readonly jsonSchema?: { readonly input?: (options: { readonly target: string }) => JsonSchema };
  };
}

/**
 * The tool's input as JSON Schema, from (in order) an explicit schema, the Standard JSON Schema interface that
 * zod 4.2+, arktype and valibot's converter implement, or zod 4's own converter.
 */
export function inputJsonSchema(
  tool: string,
  input: StandardSchemaV1 | undefined,
  explicit?: JsonSchema,
): JsonSchema {
  const invalid = (why: string) =>
    new ToolLedgerError(
      'CONFIG_INVALID',
      `Tool "${tool}": ${why}. Pass the JSON Schema yourself with registerMcpTool(server, tool, { inputJsonSchema }).`,
    );
  let schema: JsonSchema;
  if (explicit !== undefined) {
    schema = explicit;
  } else if (input === undefined) {
    schema = { type: 'object', properties: {} };
  } else {
    const convert = (input as unknown as JsonSchemaCapable)['~standard'].jsonSchema?.input;
    try {
      if (typeof convert === 'function') {
        schema = convert({ target: 'draft-07' });
      } else if ('_zod' in input) {
        schema = z.toJSONSchema(input as unknown as z.ZodMiniType, {
          io: 'input',
          target: 'draft-7',
        }) as JsonSchema;
      } else {
        throw invalid(
          `its input schema (${input['~standard'].vendor}) cannot describe itself as JSON Schema; MCP clients need one`,
        );
      }
    } catch (error) {
      if (error instanceof ToolLedgerError) throw error;
      throw invalid(`its input schema could not be converted to JSON Schema (${(error as Error).message})`);
    }
  }
  if (schema === null || typeof schema !== 'object' || schema.type !== 'object') {
    throw invalid('MCP tool inputs must be JSON objects, and this input schema does not describe one');
  }
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/** Adds the required key argument to an object JSON Schema. */
export function withKeyArgument(
  tool: string,
  schema: JsonSchema,
  field: string,
  description: string,
): JsonSchema {
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  if (Object.hasOwn(properties, field)) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Tool "${tool}" already has an argument named "${field}"; pick another name with registerMcpTool(server, tool, { keyField }).`,
    );
  }
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  return {
    ...schema,
    properties: { ...properties, [field]: { type: 'string', minLength: 1, maxLength: 255, description } },
    required: [...required, field],
  };
}

/**
 * What `registerTool` receives as `inputSchema`. McpServer 1.x derives both the published JSON Schema and its own
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
