import { html, type Markup } from '../html.js';

/** The sign-in form: a token (static or a JWT) pasted once, kept in an HttpOnly, SameSite=Strict cookie. */
export function signinPage(message: string | undefined): Markup {
  return html`${message === undefined ? html`` : html`<p class="notice alert" role="alert">${message}</p>`}
<form method="post" action="/signin" class="decision" aria-label="Sign in">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="off" required>
<div class="buttons"><button type="submit">Sign in</button></div>
</form>
<p class="none">Or send <code>Authorization: Bearer &lt;token&gt;</code> from a proxy that signs people in.</p>`;
}
