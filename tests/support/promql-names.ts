/**
 * The metric names a PromQL expression reads, for checking the rules and the dashboard against
 * the names that exist. Not a parser: string literals, label matchers, ranges and the label lists
 * of by/without/on/ignoring/group_left/group_right are removed, and what is left that looks like
 * a name and is neither called (a function or an aggregation) nor a keyword is a metric name.
 * Grafana's `label_values(<series>, <label>)` reads only its first argument.
 */

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'atan2'])
const LABEL_LISTS = /\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)/g

/** The metric names `expr` reads, sorted, each once. */
export function metricNames(expr: string): string[] {
  const labelValues = /^\s*label_values\(\s*(.*?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$/s.exec(expr)
  let text = labelValues?.[1] ?? expr
  text = text
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^{}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(LABEL_LISTS, ' ')
  const names = new Set<string>()
  for (const match of text.matchAll(/(\d[\w.]*)|([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, number, name, call] = match
    if (number !== undefined || name === undefined || call !== undefined || KEYWORDS.has(name)) continue
    names.add(name)
  }
  return [...names].sort()
}
