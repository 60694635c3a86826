import type { StandardSchemaV1 } from '@standard-schema/spec';
import * as z from 'zod/v4-mini';
import { ToolLedgerError } from '../../contract/errors.js';

export type JsonSchema = Record<string, unknown>;

interface JsonSchemaCapable {
  readonly '~standard': {
    readonly jsonSchema?: { readonly input?: (options: { readonly target: string }) => JsonSchema };
  };
}

/**
 * The tool's input as an object JSON Schema, from (in order) an explicit schema, the Standard JSON Schema
 * interface (`~standard.jsonSchema`, implemented by zod 4.2+), or zod 4's own converter for older zod 4 releases.
 * `hint` tells the developer where to pass an explicit schema when none of these works.
 */
export function inputJsonSchema(
  tool: string,
  input: StandardSchemaV1 | undefined,
  explicit: JsonSchema | undefined,
  hint: string,
): JsonSchema {
  const invalid = (why: string) =>
    new ToolLedgerError('CONFIG_INVALID', `Tool "${tool}": ${why}. Pass the JSON Schema yourself: ${hint}.`);
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
          `its input schema (${input['~standard'].vendor}) cannot describe itself as JSON Schema`,
        );
      }
    } catch (error) {
      if (error instanceof ToolLedgerError) throw error;
      throw invalid(`its input schema could not be converted to JSON Schema (${(error as Error).message})`);
    }
  }
  if (schema === null || typeof schema !== 'object' || schema.type !== 'object') {
    throw invalid('tool inputs must be JSON objects, and this input schema does not describe one');
  }
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/** Adds the key argument to an object JSON Schema, refusing a name the input already uses. */
export function withKeyArgument(
  tool: string,
  schema: JsonSchema,
  field: string,
  description: string,
  options: { readonly required: boolean; readonly hint: string },
): JsonSchema {
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  if (Object.hasOwn(properties, field)) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Tool "${tool}" already has an argument named "${field}"; pick another name for the key argument: ${options.hint}.`,
    );
  }
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  return {
    ...schema,
    properties: { ...properties, [field]: { type: 'string', minLength: 1, maxLength: 255, description } },
    ...(options.required ? { required: [...required, field] } : {}),
  };
}
