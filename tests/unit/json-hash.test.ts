/**
 * The shared JSON helpers: the nesting bound on parsed values (k8s/json.ts) and canonical JSON
 * (k8s/hash.ts). Both were rewritten for speed; each is held here to the definition it replaces:
 * nesting counted on the brackets of the text outside strings, and canonical JSON as
 * `JSON.stringify` of the key-sorted copy.
 */
import t from 'tap'
import fc from 'fast-check'
import { jsonDeeperThan, parseJsonBounded } from '../../hooks/k8s/json.ts'
import { canonicalJson, contentHash, sortKeysDeep } from '../../hooks/k8s/hash.ts'

/** Nesting of JSON text: the deepest run of open brackets outside strings (the oracle). */
function textDepth(text: string): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === '\\') i++
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if (c === '{' || c === '[') deepest = Math.max(deepest, ++depth)
    else if (c === '}' || c === ']') depth--
  }
  return deepest
}

const nested = (levels: number): unknown => {
  let value: unknown = 'leaf'
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value }
  return value
}

t.test('the nesting of a parsed value is the nesting of its text', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 14 }), (value, limit) => {
      const text = JSON.stringify(value)
      t.equal(jsonDeeperThan(JSON.parse(text), limit), textDepth(text) > limit)
    }),
    { numRuns: 500 }
  )
})

t.test('the bound: at the limit accepted, one past refused, primitives have no depth', async (t) => {
  t.equal(jsonDeeperThan(nested(40), 40), false)
  t.equal(jsonDeeperThan(nested(41), 40), true)
  t.equal(jsonDeeperThan({ a: [1, { b: [] }] }, 4), false)
  t.equal(jsonDeeperThan({ a: [1, { b: [] }] }, 3), true, 'the empty array is the fourth level')
  for (const primitive of ['text', 1, true, null, undefined]) t.equal(jsonDeeperThan(primitive, 0), false)
  t.equal(jsonDeeperThan({}, 0), true)
  t.equal(jsonDeeperThan(JSON.parse(`{"s": "${'['.repeat(500)}"}`), 1), false, 'brackets inside strings do not count')
})

t.test('a million levels are measured without a stack overflow, and stop at the limit', async (t) => {
  const text = `${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`
  t.equal(jsonDeeperThan(JSON.parse(text), 100), true)
  t.equal(parseJsonBounded(text), undefined)
})

t.test('parseJsonBounded: JSON within the bound is parsed; anything else is undefined', async (t) => {
  t.same(parseJsonBounded('{"a": [1, "x"]}'), { a: [1, 'x'] })
  t.equal(parseJsonBounded('{"a": '), undefined, 'not JSON')
  t.equal(parseJsonBounded('[[[1]]]', 2), undefined, 'too deep')
  t.same(parseJsonBounded('[[[1]]]', 3), [[[1]]])
  t.equal(parseJsonBounded('"text"'), 'text')
})

/** Plain data with the members JSON.stringify treats specially: undefined, functions, holes. */
const awkward = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2 }),
    // Every UTF-16 unit, unpaired surrogates and control characters among them.
    fc.string({ unit: 'binary' }),
    fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', 'a\udc00b', '😀', 'é'),
    fc.constantFrom(undefined, Number.NaN, Number.POSITIVE_INFINITY, -0, () => 1, Symbol('s')),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.sparseArray(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(
        fc.string(),
        fc.constantFrom('__proto__', 'constructor', 'a', 'B', 'é', '0', '4', '10', '01', '-1', '1.5', '4294967294', '4294967295')
      ),
      tie('value'),
      { maxKeys: 5 }
    )
  )
})).value

t.test('canonicalJson is JSON.stringify of the key-sorted copy, byte for byte', async (t) => {
  fc.assert(
    fc.property(awkward, (value) => {
      t.equal(canonicalJson(value), JSON.stringify(sortKeysDeep(value)))
    }),
    { numRuns: 2000 }
  )
  t.equal(canonicalJson(undefined), undefined, 'undefined at the top, as JSON.stringify gives')
  t.equal(canonicalJson({ b: 1, a: { d: [3, undefined], c: 'x' } }), '{"a":{"c":"x","d":[3,null]},"b":1}')
  t.throws(() => canonicalJson({ n: 1n }), TypeError, 'a BigInt is refused, as JSON.stringify refuses it')
  // An object lists its array-index keys first, in numeric order: so did the copy every recorded hash was taken over.
  t.equal(canonicalJson({ b: 1, 10: 2, a: 3, 9: 4, '09': 5, 4294967295: 6 }), '{"9":4,"10":2,"09":5,"4294967295":6,"a":3,"b":1}')
})

t.test('contentHash depends on content, not on key order', async (t) => {
  t.equal(contentHash({ a: 1, b: [1, 2] }), contentHash({ b: [1, 2], a: 1 }))
  t.not(contentHash({ a: 1, b: [1, 2] }), contentHash({ a: 1, b: [2, 1] }))
  t.match(contentHash({}), /^[0-9a-f]{10}$/)
})
