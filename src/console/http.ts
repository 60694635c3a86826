import type { IncomingMessage, ServerResponse } from 'node:http';

// The console's HTTP plumbing: security headers on every answer, bounded form bodies, same-origin checks.

/**
 * No inline script or style anywhere; scripts, styles and forms only from this origin; no framing.
 */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export function securityHeaders(res: ServerResponse): void {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with the console's own forms.
  res.setHeader('referrer-policy', 'same-origin');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
  res.setHeader('cross-origin-resource-policy', 'same-origin');
  res.setHeader('cache-control', 'no-store');
}

export function send(
  res: ServerResponse,
  status: number,
  body: string,
  type = 'text/html; charset=utf-8',
): void {
  res.statusCode = status;
  res.setHeader('content-type', type);
  res.end(body);
}

export function redirect(res: ServerResponse, location: string): void {
  res.statusCode = 303;
  res.setHeader('location', location);
  res.end();
}

/** A form body too big, of the wrong type, or unreadable. */
export class BadForm extends Error {}

const MAX_FORM_BYTES = 64 * 1024;

/** A posted form: `get` answers the last value of a name, `getAll` every value (the checkboxes of a bulk action). */
export class Form {
  readonly #params: URLSearchParams;
  constructor(params: URLSearchParams) {
    this.#params = params;
  }
  get(name: string): string | undefined {
    const all = this.#params.getAll(name);
    return all.length === 0 ? undefined : all[all.length - 1];
  }
  getAll(name: string): string[] {
    return this.#params.getAll(name);
  }
}

/** Reads an `application/x-www-form-urlencoded` body, at most 64 KiB. */
export async function readForm(req: IncomingMessage): Promise<Form> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw new BadForm('Send the form as a browser does.');
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new BadForm('The form is too large (64 KiB at most).');
    chunks.push(chunk as Buffer);
  }
  return new Form(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

/**
 * Whether a POST comes from this console's own pages: an `Origin` (or, without one, a `Referer`) naming another
 * site is refused before the CSRF token is even read.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const host = req.headers.host;
  const origin = req.headers.origin ?? req.headers.referer;
  if (origin === undefined || origin === 'null') return origin === undefined;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

/** An answer to a refused request, said as a page. */
export class Refused extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export const REFUSAL_STATUS = {
  not_found: 404,
  ambiguous: 409,
  invalid: 400,
  not_migrated: 409,
  no_secret: 409,
} as const;
