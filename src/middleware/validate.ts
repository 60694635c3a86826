import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ValidationIssue } from '../contract/errors.js';
import { inputInvalid, validatorThrew } from './messages.js';

function toIssue(issue: StandardSchemaV1.Issue): ValidationIssue {
  const path = issue.path?.map((segment) =>
    String(typeof segment === 'object' && segment !== null ? segment.key : segment),
  );
  return path && path.length > 0 ? { message: issue.message, path } : { message: issue.message };
}

function describe(issues: readonly ValidationIssue[]): string {
  return issues
    .slice(0, 5)
    .map((i) => (i.path ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
}

/** Runs a Standard Schema validator. Nothing touches the ledger before this passes. */
export async function validateInput(
  schema: StandardSchemaV1,
  input: unknown,
  tool: string,
): Promise<unknown> {
  let result: StandardSchemaV1.Result<unknown>;
  try {
    result = await schema['~standard'].validate(input);
  } catch (error) {
    throw validatorThrew(tool, error);
  }
  if (result.issues) {
    const issues = result.issues.map(toIssue);
    throw inputInvalid(tool, describe(issues), issues);
  }
  return result.value;
}
