import { parser } from '@prometheus-io/lezer-promql';

export interface PromqlNames {
  /** Each vector selector: its metric name and the label names it matches on. */
  readonly selectors: { metric: string | undefined; labels: string[] }[];
  /** Labels named in by/without/on/ignoring/group_left/group_right. */
  readonly groupingLabels: string[];
  /** Parse errors, as the text around each. */
  readonly errors: string[];
}

/** Reads metric and label names out of a PromQL expression with Prometheus' own lezer grammar. */
export function promqlNames(expr: string): PromqlNames {
  const tree = parser.parse(expr);
  const selectors: { metric: string | undefined; labels: string[] }[] = [];
  const groupingLabels: string[] = [];
  const errors: string[] = [];
  const text = (from: number, to: number) => expr.slice(from, to);
  tree.iterate({
    enter(node) {
      if (node.type.isError) {
        errors.push(`at ${node.from}: ${JSON.stringify(text(Math.max(0, node.from - 20), node.to + 20))}`);
        return;
      }
      if (node.name === 'VectorSelector') {
        let metric: string | undefined;
        const labels: string[] = [];
        const cursor = node.node.cursor();
        cursor.firstChild();
        do {
          if (cursor.name === 'Identifier') metric = text(cursor.from, cursor.to);
          if (cursor.name === 'LabelMatchers') {
            const matchers = cursor.node.getChildren('UnquotedLabelMatcher');
            for (const m of matchers) {
              const nameNode = m.getChild('LabelName');
              if (!nameNode) continue;
              const name = text(nameNode.from, nameNode.to);
              if (name === '__name__') {
                const value = m.getChild('StringLiteral');
                if (value) metric = JSON.parse(text(value.from, value.to)) as string;
              } else {
                labels.push(name);
              }
            }
          }
        } while (cursor.nextSibling());
        selectors.push({ metric, labels });
        return false;
      }
      if (node.name === 'GroupingLabels') {
        for (const label of node.node.getChildren('LabelName'))
          groupingLabels.push(text(label.from, label.to));
        return false;
      }
      return undefined;
    },
  });
  return { selectors, groupingLabels, errors };
}
