/**
 * Go's string helpers where a CEL rule of the API server calls them, so that a hook reading a
 * stored value trims exactly what the rule trimmed.
 */

/** Go's unicode.IsSpace: the Unicode White_Space property plus U+0085. */
const GO_SPACE =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g

/** Go's strings.TrimSpace, which CEL's `trim()` calls (JavaScript's `trim()` differs: U+FEFF, U+0085). */
export function goTrimSpace(text: string): string {
  return text.replace(GO_SPACE, '')
}
