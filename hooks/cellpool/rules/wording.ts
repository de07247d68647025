/**
 * How the pool's sentences are worded: a name or key a spec writes is quoted short, whatever the
 * input (a value is quoted by describe, hooks/k8s/schema-messages.ts, as every controller quotes
 * one), and a sentence is continued in a longer one without its full stop.
 */

/** `text` cut to at most 80 characters. */
export function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

/** `s` without its closing full stop, to be continued in a longer sentence. */
export const withoutStop = (s: string): string => s.replace(/[.\s]+$/, '')
