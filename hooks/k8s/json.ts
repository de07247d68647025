/**
 * A bound on JSON nesting, checked on the text before it is parsed.
 *
 * Everything downstream of a parse (schema validation, canonical JSON, structured clone, the
 * serializer) walks objects recursively, and a deep enough document exhausts the stack in any of
 * them. Kubernetes objects are shallow: a Pod with its managedFields is under 20 levels, and the
 * deepest object a hook receives (a request holding such objects) stays under 30. So text nested
 * deeper than the limit is refused before anything recursive sees it.
 */

/** Default deepest nesting accepted: far above what a Kubernetes object holds. */
export const MAX_JSON_DEPTH = 100

const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * True when `text`, read as JSON, nests objects and arrays more than `limit` levels deep. One
 * linear pass over the characters, skipping string contents; the text need not be valid JSON
 * (the parser reports that afterwards).
 */
export function jsonDeeperThan(text: string, limit: number = MAX_JSON_DEPTH): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
      continue
    }
    if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++
      if (depth > limit) return true
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
  }
  return false
}

/** `JSON.parse(text)`, or undefined when the text is not JSON or nests deeper than `limit`. */
export function parseJsonBounded(text: string, limit: number = MAX_JSON_DEPTH): unknown {
  if (jsonDeeperThan(text, limit)) return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}
