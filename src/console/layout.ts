import { html, type Markup } from './html.js';
import type { Identity } from './identity.js';

/** What every page knows of the request: who asks, whether writes are on, and the token for its forms. */
export interface PageContext {
  readonly identity: Identity;
  readonly writable: boolean;
  readonly csrf: string;
  readonly schema: string;
}

const NAV = [
  ['/', 'Overview'],
  ['/search', 'Search'],
  ['/inbox/unknown', 'Unknown outcomes'],
  ['/inbox/approvals', 'Approvals'],
] as const;

/** A whole page: a plain document, the stylesheet, no inline script or style (the CSP allows neither). */
export function page(
  title: string,
  context: PageContext | undefined,
  body: Markup,
  options: { readonly current?: string; readonly script?: string } = {},
): string {
  const nav =
    context === undefined
      ? html``
      : html`<nav aria-label="Main"><ul>${NAV.map(
          ([href, label]) =>
            html`<li><a href="${href}"${options.current === href ? html` aria-current="page"` : html``}>${label}</a></li>`,
        )}</ul></nav>
<p class="who">Signed in as <strong>${context.identity.actor}</strong> (${context.identity.role})${
          context.writable ? html`` : html` · <span class="badge">read-only</span>`
        }${
          context.identity.viaCookie
            ? html` · <form method="post" action="/signout" class="inline"><input type="hidden" name="csrf" value="${context.csrf}"><button type="submit" class="link">Sign out</button></form>`
            : html``
        }</p>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · tool-ledger console</title>
<link rel="stylesheet" href="/static/console.css">
${options.script === undefined ? html`` : html`<script src="${options.script}" defer></script>`}
</head>
<body>
<header><a class="brand" href="/">tool-ledger console</a>${context === undefined ? html`` : html` <span class="schema">schema ${context.schema}</span>`}${nav}</header>
<main id="main">
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`.text;
}

/** A message above a page's content: `status` for news, `alert` for a refusal. */
export function notice(kind: 'status' | 'alert', text: string): Markup {
  return html`<p class="notice ${kind}" role="${kind}">${text}</p>`;
}
