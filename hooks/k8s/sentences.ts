/**
 * The status messages' sentence grammar: problems and reasons are full sentences, and a longer
 * message joins several of them into one.
 */

/** `s` without its closing full stop (and trailing space), to be continued in a longer sentence. */
export function withoutStop(s: string): string {
  return s.replace(/[.\s]+$/, '')
}
