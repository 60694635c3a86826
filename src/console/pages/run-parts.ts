import type { KeyForm } from '../../support/key-form.js';
import { html, type Markup } from '../html.js';
import type { PageContext } from '../layout.js';

/** A key or user id as telemetry would show it: raw when safe, else `hmac:…`, else hidden. */
export function keyText(form: KeyForm): string {
  if (form.key !== null) return form.key;
  return form.keyHash === null ? '(hidden: set TOOL_LEDGER_KEY_HASH_SECRET)' : `hmac:${form.keyHash}`;
}

/** Label and value pairs as a description list. */
export function fields(pairs: readonly (readonly [string, Markup | string])[]): Markup {
  return html`<dl class="fields">${pairs.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}

/** Why a decision form is not offered, or undefined when it is. */
export function writeBlocked(context: PageContext): string | undefined {
  if (!context.writable)
    return 'This console is read-only: start it with --allow-writes (and an operator) to decide here.';
  if (context.identity.role !== 'operator') return 'Deciding needs the operator role; you are a viewer.';
  return undefined;
}

/**
 * The form that settles an unknown outcome: what happened (a result, a final failure, or run it again), and a
 * reason, which is required. The actor is the signed-in identity, never a field of the form.
 */
export function resolveForm(runId: string, context: PageContext, returnTo: string): Markup {
  const blocked = writeBlocked(context);
  if (blocked !== undefined) return html`<p class="none">${blocked}</p>`;
  const id = `r${runId}`;
  return html`<form class="decision" method="post" action="/runs/${runId}/resolve" aria-label="Resolve run ${runId}">
<input type="hidden" name="csrf" value="${context.csrf}">
<input type="hidden" name="return" value="${returnTo}">
<fieldset><legend>What happened? Check the provider first.</legend>
<div><input type="radio" id="${id}-result" name="resolution" value="result" required> <label for="${id}-result">It happened: callers get this result (JSON)</label>
<textarea id="${id}-result-json" name="result" aria-label="Result (JSON) for run ${runId}" spellcheck="false"></textarea></div>
<div><input type="radio" id="${id}-failed" name="resolution" value="failed"> <label for="${id}-failed">It did not happen, and must not be retried: callers get this failure</label>
<input type="text" id="${id}-failed-message" name="failed" aria-label="Failure message for run ${runId}"></div>
<div><input type="radio" id="${id}-rerun" name="resolution" value="rerun"> <label for="${id}-rerun">It did not happen: the next call runs it again</label></div>
</fieldset>
<label for="${id}-reason">Reason (required, recorded with your name, ${context.identity.actor})</label>
<textarea id="${id}-reason" name="reason" required></textarea>
<div class="buttons"><button type="submit">Resolve</button></div>
</form>`;
}

/**
 * The box that selects a run for a bulk decision. It sits in the run's own section but belongs to the bulk form
 * further down (the `form` attribute), so selecting and deciding need no script.
 */
export function selectBox(runId: string, formId: string, context: PageContext): Markup {
  if (writeBlocked(context) !== undefined) return html``;
  return html`<p class="select"><input type="checkbox" id="${formId}-${runId}" name="run" value="${runId}" form="${formId}"> <label for="${formId}-${runId}">Select run ${runId} for a decision on several at once</label></p>`;
}
