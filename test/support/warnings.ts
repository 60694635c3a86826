import { vi } from 'vitest';

/**
 * Catches the process warnings with `code` that a test provokes on purpose (the implicit in-memory ledger, the
 * MCP instrumentation without a loader hook), so the test can assert them and they stay out of the run's output.
 * Every other warning still goes through, so an unexpected one is still seen.
 */
export function catchWarnings(code: string): { readonly caught: string[]; restore(): void } {
  const caught: string[] = [];
  const original = process.emitWarning.bind(process);
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(((
    warning: string | Error,
    ...rest: unknown[]
  ) => {
    const [options, legacyCode] = rest;
    const given =
      typeof options === 'object' && options !== null
        ? (options as { code?: string }).code
        : typeof legacyCode === 'string'
          ? legacyCode
          : warning instanceof Error
            ? (warning as NodeJS.ErrnoException).code
            : undefined;
    if (given === code) caught.push(warning instanceof Error ? warning.message : String(warning));
    else (original as (...args: unknown[]) => void)(warning, ...rest);
  }) as typeof process.emitWarning);
  return { caught, restore: () => spy.mockRestore() };
}
