/**
 * A spec's schema problems, one sentence per field, for every controller whose CRD is rendered
 * from a TypeBox schema: the walk over TypeBox's errors, the JSON pointer turned into the field a
 * person reads (`/ports/1/name` → `spec.ports[1].name`), and the sentence (schema-messages.ts).
 *
 * Each controller keeps its own wording of a field segment and a value, so that its schema
 * problems and its own rules' problems meet at the same field, and words the errors only its own
 * schema raises; the walk and the order of the sentences are the same for all.
 */
import type { TSchema } from '@sinclair/typebox'
import type { ValueError } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { commonSchemaMessage, invalidValueMessage } from './schema-messages.ts'

/** How a controller names fields and quotes values in its problems. */
export interface SchemaWording {
  /** The field the pointer starts from (`spec`). */
  root: string
  /** A path segment (escapes undone, not an index) as it follows the field: `.name` or `[key]`. */
  segment: (part: string) => string
  /** A value as a problem quotes it. */
  quote: (value: unknown) => string
  /** The sentence of an error only this schema raises, after the common ones; undefined for TypeBox's own. */
  own?: (error: ValueError, field: string, value: string) => string | undefined
}

/** A JSON pointer as a field under `wording.root`: indices in brackets, escapes undone. */
export function pointerField(path: string, wording: Pick<SchemaWording, 'root' | 'segment'>): string {
  let field = wording.root
  for (const raw of path.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    field += /^\d+$/.test(part) ? `[${part}]` : wording.segment(part)
  }
  return field
}

/** The sentence for one error: the common rules, else the controller's own, else TypeBox's message. */
export function schemaSentence(error: ValueError, wording: SchemaWording): string {
  const field = pointerField(error.path, wording)
  const value = wording.quote(error.value)
  return commonSchemaMessage(error, field, value) ?? wording.own?.(error, field, value) ?? invalidValueMessage(error, field, value)
}

/**
 * One problem per field of `value` that `schema` refuses. TypeBox reports a missing property
 * twice (required, then its type): the first is kept.
 */
export function schemaProblems(schema: TSchema, value: unknown, wording: SchemaWording): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = []
  const seen = new Set<string>()
  for (const error of Value.Errors(schema, value)) {
    if (seen.has(error.path)) continue
    seen.add(error.path)
    out.push({ field: pointerField(error.path, wording), message: schemaSentence(error, wording) })
  }
  return out
}
