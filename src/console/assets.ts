// The console's two static files, served with long-lived hashes-free names under /static/. No build step: the
// stylesheet is plain CSS and the one script (the trace waterfall) is plain JavaScript that draws from data
// attributes the server wrote; without it the same calls read as a table.

export const CONSOLE_CSS = `:root { color-scheme: light; --fg: #1d2329; --muted: #5b6670; --line: #d8dde2; --bg: #f7f8fa;
  --accent: #1f5fa8; --warn: #8a4b00; --bad: #a1261b; --ok: #1d6b35; font: 15px/1.45 system-ui, sans-serif; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .6rem 1.2rem;
  background: #fff; border-bottom: 1px solid var(--line); }
.brand { font-weight: 600; color: var(--fg); text-decoration: none; }
.schema { color: var(--muted); font-size: .9em; }
nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
nav a { color: var(--accent); text-decoration: none; padding: .2rem 0; }
nav a[aria-current="page"] { border-bottom: 2px solid var(--accent); }
.who { margin: 0 0 0 auto; color: var(--muted); font-size: .9em; }
main { padding: 1rem 1.2rem 3rem; max-width: 90rem; }
h1 { font-size: 1.35rem; margin: .3rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible {
  outline: 3px solid #f0a500; outline-offset: 2px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: .35rem .55rem; border-bottom: 1px solid var(--line); vertical-align: top;
  overflow-wrap: anywhere; }
th { background: #eef1f4; font-weight: 600; font-size: .9em; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; background: #fff;
  border: 1px solid var(--line); padding: .7rem 1rem; }
dl.fields dt { color: var(--muted); }
dl.fields dd { margin: 0; overflow-wrap: anywhere; }
pre.json { background: #fff; border: 1px solid var(--line); padding: .6rem; overflow: auto; max-height: 24rem;
  white-space: pre-wrap; overflow-wrap: anywhere; }
form.search { display: grid; grid-template-columns: repeat(auto-fill, minmax(13rem, 1fr)); gap: .6rem 1rem;
  background: #fff; border: 1px solid var(--line); padding: .8rem 1rem; align-items: end; }
label { display: block; font-size: .9em; color: var(--muted); }
input, select, textarea { font: inherit; width: 100%; padding: .3rem .4rem; border: 1px solid #9aa5af;
  border-radius: 3px; background: #fff; color: var(--fg); }
textarea { min-height: 3.2rem; }
button { font: inherit; padding: .35rem .9rem; border-radius: 3px; border: 1px solid var(--accent);
  background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
button.link { border: 0; background: none; color: var(--accent); padding: 0; text-decoration: underline; }
form.inline { display: inline; }
.decision { background: #fff; border: 1px solid var(--line); padding: .8rem 1rem; margin: .8rem 0; }
.decision fieldset { border: 0; padding: 0; margin: 0 0 .6rem; }
.decision .buttons { display: flex; gap: .6rem; margin-top: .6rem; }
.decision .select { margin: 0 0 .4rem; display: flex; align-items: center; gap: .4rem; }
.decision .select input, .decision fieldset input[type="radio"] { width: auto; }
.decision .select label { display: inline; }
.decision.bulk { border-color: var(--accent); }
.notice { padding: .5rem .8rem; border-radius: 3px; border: 1px solid var(--line); background: #fff; }
.notice.alert { border-color: var(--bad); color: var(--bad); }
.notice.status { border-color: var(--ok); color: var(--ok); }
.badge { border: 1px solid var(--warn); color: var(--warn); border-radius: 3px; padding: 0 .3rem; }
.status-unknown, .status-failed { color: var(--bad); font-weight: 600; }
.status-succeeded { color: var(--ok); }
.none, .more { color: var(--muted); }
.cards { display: flex; flex-wrap: wrap; gap: .8rem; }
.card { background: #fff; border: 1px solid var(--line); padding: .6rem 1rem; min-width: 10rem; }
.card strong { display: block; font-size: 1.4rem; }
.over { color: var(--bad); font-weight: 600; }
.waterfall { position: relative; background: #fff; border: 1px solid var(--line); padding: .5rem; margin-bottom: .6rem; }
.waterfall .row { display: grid; grid-template-columns: 14rem 1fr; align-items: center; gap: .5rem; height: 1.6rem; }
.waterfall .track { position: relative; height: 1rem; background: #f0f2f4; }
.waterfall .bar { position: absolute; top: 0; height: 1rem; min-width: 3px; background: var(--accent); }
.waterfall .bar.replayed, .waterfall .bar.polled { background: #6c8fb8; }
.waterfall .bar.conflict, .waterfall .bar.failed, .waterfall .bar.unknown { background: var(--bad); }
.waterfall svg { position: absolute; inset: 0; pointer-events: none; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
`;

/**
 * Draws the trace timeline: each call of the table `#calls` (one <tr> per call, its time, waited ms and outcome in
 * data attributes) becomes a bar on a common time axis, and a replay's FOLLOWS_FROM link to its original a line.
 * It reads only data attributes and writes only elements and attributes, never markup from data.
 */
export const WATERFALL_JS = `'use strict';
document.addEventListener('DOMContentLoaded', function () {
  var table = document.getElementById('calls');
  if (!table) return;
  var rows = Array.prototype.slice.call(table.querySelectorAll('tbody tr[data-start]'));
  if (rows.length === 0) return;
  var calls = rows.map(function (tr) {
    var start = Date.parse(tr.getAttribute('data-start'));
    var ms = Number(tr.getAttribute('data-ms')) || 0;
    return { start: start, end: start + Math.max(ms, 1), outcome: tr.getAttribute('data-outcome') || '',
      span: tr.getAttribute('data-span') || '', original: tr.getAttribute('data-original') || '',
      label: tr.getAttribute('data-label') || '' };
  });
  var t0 = Math.min.apply(null, calls.map(function (c) { return c.start; }));
  var t1 = Math.max.apply(null, calls.map(function (c) { return c.end; }));
  var span = Math.max(t1 - t0, 1);
  var box = document.createElement('div');
  box.className = 'waterfall';
  box.setAttribute('role', 'img');
  box.setAttribute('aria-label', 'Waterfall of ' + calls.length + ' calls over ' + span + ' ms; the table below lists them');
  var bySpan = {};
  calls.forEach(function (c, i) {
    var row = document.createElement('div');
    row.className = 'row';
    var name = document.createElement('span');
    name.textContent = c.label;
    var track = document.createElement('div');
    track.className = 'track';
    var bar = document.createElement('div');
    bar.className = 'bar ' + c.outcome.replace(/[^a-z_]/g, '');
    bar.style.left = ((c.start - t0) / span * 100) + '%';
    bar.style.width = Math.max((c.end - c.start) / span * 100, 0.4) + '%';
    bar.title = c.outcome;
    track.appendChild(bar);
    row.appendChild(name);
    row.appendChild(track);
    box.appendChild(row);
    if (c.span) bySpan[c.span] = i;
  });
  table.parentNode.insertBefore(box, table);
  var svgNs = 'http://www.w3.org/2000/svg';
  var svg = document.createElementNS(svgNs, 'svg');
  svg.setAttribute('aria-hidden', 'true');
  box.appendChild(svg);
  var tracks = box.querySelectorAll('.track');
  var origin = box.getBoundingClientRect();
  calls.forEach(function (c, i) {
    var j = c.original ? bySpan[c.original] : undefined;
    if (j === undefined || j === i) return;
    var from = tracks[j].firstChild.getBoundingClientRect();
    var to = tracks[i].firstChild.getBoundingClientRect();
    var line = document.createElementNS(svgNs, 'line');
    line.setAttribute('x1', String(from.left - origin.left));
    line.setAttribute('y1', String(from.bottom - origin.top));
    line.setAttribute('x2', String(to.left - origin.left));
    line.setAttribute('y2', String(to.top - origin.top));
    line.setAttribute('stroke', '#6c8fb8');
    line.setAttribute('stroke-dasharray', '3 2');
    svg.appendChild(line);
  });
});
`;
