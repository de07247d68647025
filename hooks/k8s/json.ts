/**
 * A bound on JSON nesting, checked on the parsed value before anything recursive sees it.
 *
 * Everything downstream of a parse (schema validation, canonical JSON, structured clone, the
 * serializer) walks objects recursively, and a deep enough document exhausts the stack in any of
 * them. Kubernetes objects are shallow: a Pod with its managedFields is under 20 levels, and the
 * deepest object a hook receives (a request holding such objects) stays under 30. So a value
 * nested deeper than the limit is refused before it goes anywhere else.
 *
 * The check runs on the value, not on the text: V8's `JSON.parse` and secure-json-parse's
 * prototype scan are both iterative (a body of a million nested arrays parses without a stack
 * overflow), and walking the parsed objects costs a fraction of reading every character of the
 * text again (about 40 µs against 110 to 230 µs for the 35 KiB request of an Instance sync, which
 * showed as the largest cost of the transport in `npm run bench:profile`). For JSON text the two
 * agree exactly: a value's nesting is the nesting of the brackets of its text outside strings.
 */

/** Default deepest nesting accepted: far above what a Kubernetes object holds. */
export const MAX_JSON_DEPTH = 100

/**
 * True when `value` nests objects and arrays more than `limit` levels deep: the value itself is
 * level 1 when it is an object or an array. Iterative (an explicit stack), so a value of any
 * depth is measured without recursion; it stops at the first member past the limit. Meant for
 * parsed JSON, whose objects hold only own members: `for...in` walks them without the array per
 * object that `Object.values` would allocate (an enumerable member someone added to
 * `Object.prototype` would be counted too, which can only refuse more, never less).
 */
export function jsonDeeperThan(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false
  const nodes: object[] = [value]
  const depths: number[] = [1]
  for (let node = nodes.pop(); node !== undefined; node = nodes.pop()) {
    const depth = depths.pop() ?? 1
    if (depth > limit) return true
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const member: unknown = node[i]
        if (typeof member === 'object' && member !== null) {
          nodes.push(member)
          depths.push(depth + 1)
        }
      }
    } else {
      for (const key in node) {
        const member: unknown = (node as Record<string, unknown>)[key]
        if (typeof member === 'object' && member !== null) {
          nodes.push(member)
          depths.push(depth + 1)
        }
      }
    }
  }
  return false
}

/** `JSON.parse(text)`, or undefined when the text is not JSON or nests deeper than `limit`. */
export function parseJsonBounded(text: string, limit: number = MAX_JSON_DEPTH): unknown {
  let value: unknown
  try {
    value = JSON.parse(text) as unknown
  } catch {
    return undefined
  }
  return jsonDeeperThan(value, limit) ? undefined : value
}
