/**
 * Sentences for the errors a CRD's TypeBox schema finds in a spec, worded the same way for every
 * controller: status and admission answers say in words a person can act on which field broke
 * which rule.
 *
 * Each controller names fields and quotes values its own way (so that its schema problems and its
 * own rule problems meet at the same field), and words the errors only its schema can raise; the
 * rules every schema states are worded here once.
 */
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { canonicalJson } from './hash.ts'
import { isRecord } from './objects.ts'

/** The schema keywords a message quotes. */
interface Keywords {
  enum?: unknown
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  maxItems?: number
  maxProperties?: number
}

/**
 * The sentence for a required field, a value outside its enum, a number outside its range, or a
 * string or list of the wrong length; undefined for any other error, which the caller words.
 * `field` is the field as the caller names it, `value` the value as the caller quotes it.
 */
export function commonSchemaMessage(error: ValueError, field: string, value: string): string | undefined {
  const schema = error.schema as Keywords
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return `${field} is required`
    case ValueErrorType.Kind:
      if (!Array.isArray(schema.enum)) return undefined
      return `${field} ${value} is not one of ${schema.enum.map((v) => (v === '' ? '""' : String(v))).join(', ')}`
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `${field} ${value} is below the minimum ${schema.minimum}`
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMaximum:
      return `${field} ${value} is above the maximum ${schema.maximum}`
    case ValueErrorType.StringMinLength:
      return schema.minLength === 1 ? `${field} must not be empty` : `${field} ${value} is shorter than ${schema.minLength} characters`
    case ValueErrorType.StringMaxLength:
      return `${field} ${value} is longer than ${schema.maxLength} characters`
    case ValueErrorType.ArrayMaxItems:
      return `${field} has ${Array.isArray(error.value) ? error.value.length : '?'} entries; at most ${schema.maxItems}`
    case ValueErrorType.ObjectMaxProperties: {
      const count = typeof error.value === 'object' && error.value !== null ? Object.keys(error.value).length : '?'
      return `${field} has ${count} entries; at most ${schema.maxProperties}`
    }
    default:
      return undefined
  }
}

/** The fallback sentence: TypeBox's own message, after the field and the value. */
export function invalidValueMessage(error: ValueError, field: string, value: string): string {
  return `${field} ${value} is invalid: ${error.message.charAt(0).toLowerCase()}${error.message.slice(1)}`
}

/** The longest key a field path spells out; a longer one is cut, so a message stays small. */
const MAX_FIELD_KEY = 63

/**
 * How a key of a field path follows the path so far (`first` when the path is still empty):
 * `.name`, or `[...]` for a key that is not an identifier.
 */
export type FieldSegment = (key: string, first: boolean) => string

/** An identifier as `.name` (bare when first), any other key quoted as JSON and cut to a readable length. */
const quotedSegment: FieldSegment = (key, first) => {
  const part = key.length > MAX_FIELD_KEY ? `${key.slice(0, MAX_FIELD_KEY)}…` : key
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(part)) return `[${JSON.stringify(part)}]`
  return first ? part : `.${part}`
}

/**
 * A JSON pointer as a field path a person reads: `/ports/1/name` under `spec` is
 * `spec.ports[1].name`, the pointer's escapes (`~1`, `~0`) are undone, an index is written in
 * brackets, and every other key as `segment` writes it (by default a key that is not an identifier
 * is quoted: `labels["app/x"]`). An empty `root` starts the path with the first key.
 */
export function fieldOfPointer(pointer: string, root: string, segment: FieldSegment = quotedSegment): string {
  let field = root
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    field += /^\d+$/.test(key) && key.length <= MAX_FIELD_KEY ? `[${key}]` : segment(key, field === '')
  }
  return field
}

/** The longest value a message quotes; longer ones are cut, so status stays small whatever the input. */
const MAX_DESCRIBED = 120

/** A value as a message shows it: strings bare, everything else as JSON, cut to a readable length. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return value === '' ? '""' : cut(value)
  if (value === undefined) return 'nothing'
  return cut(canonicalJson(value) ?? typeof value)
}

function cut(text: string): string {
  return text.length > MAX_DESCRIBED ? `${text.slice(0, MAX_DESCRIBED)}… (${text.length} characters)` : text
}

/** What a stored value is, as a problem names it: `a list`, `null`, `an object`, `a string`. */
export function kindOf(value: unknown): string {
  if (Array.isArray(value)) return 'a list'
  if (value === null) return 'null'
  if (isRecord(value)) return 'an object'
  return `a ${typeof value}`
}
