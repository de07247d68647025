/**
 * The schema of a CRD field holding Kubernetes' LabelSelector (`metav1.LabelSelector`), with the
 * API server's rules as CEL (hooks/k8s/label-selector.ts restates them for the hooks, and says
 * what the bounds are for).
 */
import { Type, type Static } from '@sinclair/typebox'
import { StringEnum } from './kit.ts'
import { MAX_EXPRESSION_VALUES, MAX_MATCH_EXPRESSIONS, MAX_MATCH_LABELS, SELECTOR_OPERATORS } from '../k8s/label-selector.ts'

/** A label value as a schema pattern (empty, or letters, digits, `-`, `_`, `.` between alphanumerics). */
const LABEL_VALUE_PATTERN = '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'
/** A qualified name (label key) as a CEL regular expression; the 63-character name part is checked apart. */
const QUALIFIED_KEY_RE = '^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$'
/** CEL: `k` is a label key (prefix at most 253, name at most 63). */
const keyRule = (k: string): string =>
  `${k}.matches('${QUALIFIED_KEY_RE}') && size(${k}.split('/')[size(${k}.split('/')) - 1]) <= 63 && size(${k}) <= 317`

/** The schema of a LabelSelector field; `description` says what it selects. */
export function LabelSelectorSchema(description: string) {
  return Type.Object(
    {
      matchLabels: Type.Optional(
        Type.Record(Type.String(), Type.String({ maxLength: 63, pattern: LABEL_VALUE_PATTERN }), {
          maxProperties: MAX_MATCH_LABELS,
          description: 'Labels that must all be present with these values.',
          'x-kubernetes-validations': [
            { rule: `self.all(k, ${keyRule('k')})`, message: 'every key must be a label key (a qualified name)' }
          ]
        })
      ),
      matchExpressions: Type.Optional(
        Type.Array(
          Type.Object(
            {
              key: Type.String({
                maxLength: 317,
                description: 'The label key.',
                'x-kubernetes-validations': [{ rule: keyRule('self'), message: 'must be a label key (a qualified name)' }]
              }),
              operator: StringEnum(SELECTOR_OPERATORS, { description: 'In, NotIn, Exists or DoesNotExist.' }),
              values: Type.Optional(
                Type.Array(Type.String({ maxLength: 63, pattern: LABEL_VALUE_PATTERN }), {
                  maxItems: MAX_EXPRESSION_VALUES,
                  description: 'The values, for In and NotIn (at least one); empty for Exists and DoesNotExist.'
                })
              )
            },
            {
              description: 'A requirement on one label.',
              'x-kubernetes-validations': [
                {
                  rule: "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
                  message: 'In and NotIn need at least one value; Exists and DoesNotExist take none',
                  fieldPath: '.values'
                }
              ]
            }
          ),
          { maxItems: MAX_MATCH_EXPRESSIONS, description: 'Requirements that must all hold.' }
        )
      )
    },
    { description }
  )
}
export type LabelSelector = Static<ReturnType<typeof LabelSelectorSchema>>
