import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export function readText(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

export function readYaml<T = unknown>(path: string): T {
  return parseYaml(readText(path), { merge: true }) as T;
}

export interface DashboardTarget {
  readonly dashboard: string;
  readonly panel: string;
  readonly refId: string;
  readonly datasourceType: string;
  readonly datasourceUid: string;
  readonly target: Record<string, unknown>;
}

interface Panel {
  title?: string;
  type?: string;
  datasource?: { type?: string; uid?: string };
  targets?: Record<string, unknown>[];
  panels?: Panel[];
}

export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Record<string, unknown>[] };
}

export const DASHBOARD_FILES = readdirSync(join(ROOT, 'dashboards'))
  .filter((f) => f.endsWith('.json'))
  .sort();

export function loadDashboard(file: string): Dashboard {
  return JSON.parse(readText(join('dashboards', file))) as Dashboard;
}

function flatten(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...flatten(p.panels ?? [])]);
}

/** Every query target of every panel, with the datasource it runs on (the target's, else the panel's). */
export function dashboardTargets(file: string): DashboardTarget[] {
  const dashboard = loadDashboard(file);
  return flatten(dashboard.panels).flatMap((panel) =>
    (panel.targets ?? []).map((target) => {
      const ds = (target.datasource as { type?: string; uid?: string } | undefined) ?? panel.datasource ?? {};
      return {
        dashboard: file,
        panel: panel.title ?? '(untitled)',
        refId: String(target.refId ?? ''),
        datasourceType: ds.type ?? '',
        datasourceUid: ds.uid ?? '',
        target,
      };
    }),
  );
}

export interface PromqlSource {
  /** Where it comes from, for failure messages. */
  readonly where: string;
  /** As written, with Grafana variables. */
  readonly raw: string;
}

interface RuleFile {
  groups: {
    name: string;
    rules: { alert?: string; record?: string; expr: string; annotations?: Record<string, string> }[];
  }[];
}

export const RULE_FILES = readdirSync(join(ROOT, 'prometheus/rules'))
  .filter((f) => f.endsWith('.rules.yml'))
  .map((f) => `prometheus/rules/${f}`);

export function alertRules() {
  return RULE_FILES.flatMap((file) =>
    readYaml<RuleFile>(file).groups.flatMap((g) => g.rules.map((rule) => ({ file, ...rule }))),
  );
}

/**
 * Every PromQL expression shipped: dashboard targets, the selectors inside dashboard variable queries
 * (`label_values(<selector>, label)` is Grafana syntax around a PromQL selector), and alert rules.
 */
export function promqlSources(): PromqlSource[] {
  const out: PromqlSource[] = [];
  for (const file of DASHBOARD_FILES) {
    for (const t of dashboardTargets(file)) {
      if (t.datasourceType !== 'prometheus') continue;
      out.push({ where: `${file} / ${t.panel} / ${t.refId}`, raw: String(t.target.expr) });
    }
    for (const variable of loadDashboard(file).templating.list) {
      if (variable.type !== 'query') continue;
      const ds = variable.datasource as { type?: string } | undefined;
      if (ds?.type !== 'prometheus') continue;
      const query = (variable.query as { query?: string } | string | undefined) ?? '';
      const text = typeof query === 'string' ? query : (query.query ?? '');
      const match = /^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$/.exec(text.trim());
      if (!match)
        throw new Error(`${file}: variable ${String(variable.name)} has an unsupported query: ${text}`);
      out.push({ where: `${file} / variable ${String(variable.name)}`, raw: `${match[1]}` });
      out.push({
        where: `${file} / variable ${String(variable.name)} (label)`,
        raw: `count by (${match[2]}) (${match[1]})`,
      });
    }
  }
  for (const rule of alertRules()) {
    out.push({ where: `${rule.file} / ${rule.alert ?? rule.record}`, raw: rule.expr });
  }
  return out;
}

/**
 * Fills in Grafana's variables the way Grafana would for "All": multi-value regex variables become `.*`, and
 * the interval macros become a fixed range. Throws on a variable it does not know, so a new one gets a test.
 */
export function fillGrafanaPromql(raw: string, rangeInterval: string): string {
  const filled = raw
    .replaceAll('$__rate_interval', rangeInterval)
    .replaceAll('$__interval', rangeInterval)
    .replaceAll('$__range', rangeInterval)
    .replace(/\$\{?(job|tool)\}?/g, '.*');
  const left = /\$\{?[A-Za-z_]+/.exec(filled);
  if (left) throw new Error(`unfilled Grafana variable ${left[0]} in ${raw}`);
  return filled;
}
