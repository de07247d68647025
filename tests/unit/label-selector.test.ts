/**
 * Kubernetes' LabelSelector as hooks/k8s/label-selector.ts reads it (apimachinery's
 * LabelSelectorAsSelector): the operators, the rules a stored selector may break, the sentence,
 * and any input without a throw. Expectations are written out from Kubernetes' semantics.
 */
import t from 'tap'
import fc from 'fast-check'
import { describeSelector, labelSelectorProblems, selectorMatches } from '../../hooks/k8s/label-selector.ts'

t.test('matchLabels and matchExpressions are ANDed; absent and empty match everything', async (t) => {
  const selector = {
    matchLabels: { team: 'a' },
    matchExpressions: [
      { key: 'tier', operator: 'In', values: ['gold', 'silver'] },
      { key: 'frozen', operator: 'DoesNotExist' }
    ]
  }
  t.ok(selectorMatches(selector, { team: 'a', tier: 'gold' }))
  t.notOk(selectorMatches(selector, { team: 'a', tier: 'bronze' }), 'In: value not listed')
  t.notOk(selectorMatches(selector, { team: 'b', tier: 'gold' }), 'matchLabels differs')
  t.notOk(selectorMatches(selector, { team: 'a', tier: 'gold', frozen: '' }), 'DoesNotExist with the key, even empty')
  t.ok(selectorMatches(undefined, {}), 'absent')
  t.ok(selectorMatches({}, undefined), 'empty, on an object without labels')
  t.ok(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['1'] }] }, {}), 'NotIn: missing key')
  t.ok(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }, { x: '' }), 'Exists: empty value')
})

t.test('a selector that breaks a rule matches nothing, and each rule is named', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ matchExpressions: [{ key: 'x', operator: 'In' }] }, 'sel.matchExpressions[0].values must list at least one value for operator In'],
    [
      { matchExpressions: [{ key: 'x', operator: 'Exists', values: ['a'] }] },
      'sel.matchExpressions[0].values must be empty for operator Exists'
    ],
    [
      { matchExpressions: [{ key: 'x', operator: 'Gt', values: ['1'] }] },
      'sel.matchExpressions[0].operator must be one of In, NotIn, Exists, DoesNotExist'
    ],
    [{ matchExpressions: [{ key: 'a/b/c', operator: 'Exists' }] }, 'sel.matchExpressions[0].key must be a label key'],
    [{ matchLabels: { 'bad key!': 'v' } }, 'sel.matchLabels: bad key! is not a label key'],
    [{ matchLabels: { k: 'bad value!' } }, 'sel.matchLabels[k] is not a label value'],
    [{ matchLabels: { k: 3 } }, 'sel.matchLabels[k] is not a label value'],
    ['text', 'sel must be an object (a LabelSelector)']
  ]
  for (const [selector, message] of cases) {
    t.strictSame(labelSelectorProblems(selector, 'sel'), [message], message)
    t.notOk(selectorMatches(selector, { x: '1', k: 'v', 'a/b/c': '' }), `${message}: matches nothing`)
  }
  t.strictSame(labelSelectorProblems({ matchLabels: { 'example.com/tier': 'a' } }, 'sel'), [], 'a prefixed key')
})

t.test('a label named like a prototype member is a label like any other', async (t) => {
  t.notOk(selectorMatches({ matchLabels: { constructor: 'x' } }, {}))
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'toString', operator: 'Exists' }] }, {}))
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'proto', operator: 'Exists' }] }, JSON.parse('{"__proto__": {"proto": "x"}}')))
})

t.test('the sentence', async (t) => {
  t.equal(describeSelector(undefined), 'every namespace')
  t.equal(describeSelector({}), 'every namespace')
  t.equal(
    describeSelector({
      matchLabels: { b: '2', a: '1' },
      matchExpressions: [
        { key: 'z', operator: 'In', values: ['x', 'y'] },
        { key: 'n', operator: 'NotIn', values: ['q'] },
        { key: 'e', operator: 'Exists' },
        { key: 'd', operator: 'DoesNotExist' }
      ]
    }),
    'a=1, b=2, z in (x, y), n notin (q), e, !d'
  )
})

t.test('any input: no throw, and a malformed selector never matches', async () => {
  fc.assert(
    fc.property(fc.anything(), fc.anything(), (selector, labels) => {
      const problems = labelSelectorProblems(selector, 'sel')
      const matched = selectorMatches(selector, labels)
      describeSelector(selector)
      return !(problems.length > 0 && matched)
    }),
    { numRuns: 2000 }
  )
})
