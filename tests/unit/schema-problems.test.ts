/** The shared walk over a schema's errors: one problem per field, named as the controller names it. */
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { fieldOfPointer } from '../../hooks/k8s/schema-messages.ts'
import { schemaProblems, type SchemaWording } from '../../hooks/k8s/schema-problems.ts'

const WORDING: SchemaWording = {
  root: 'spec',
  segment: (part) => (/^[A-Za-z0-9]+$/.test(part) ? `.${part}` : `[${part}]`),
  quote: (value) => JSON.stringify(value) ?? 'nothing'
}

t.test('a JSON pointer becomes the field a person reads, escapes undone', async (t) => {
  t.equal(fieldOfPointer('', 'spec', WORDING.segment), 'spec')
  t.equal(fieldOfPointer('/ports/1/name', 'spec', WORDING.segment), 'spec.ports[1].name')
  t.equal(fieldOfPointer('/labels/example.com~1zone', 'spec', WORDING.segment), 'spec.labels[example.com/zone]')
  t.equal(fieldOfPointer('/a~0b', 'spec', WORDING.segment), 'spec[a~b]')
})

t.test('each field is named once, with the common sentence first', async (t) => {
  const schema = Type.Object({ name: Type.String({ minLength: 1 }), count: Type.Integer({ maximum: 3 }) })
  const got = schemaProblems(schema, { name: '', count: 5 }, WORDING)
  t.same(got, [
    { field: 'spec.name', message: 'spec.name must not be empty' },
    { field: 'spec.count', message: 'spec.count 5 is above the maximum 3' }
  ])
  const missing = schemaProblems(schema, { count: 1 }, WORDING)
  t.same(missing, [{ field: 'spec.name', message: 'spec.name is required' }], 'a missing property is reported once')
})

t.test("a controller's own sentence, else TypeBox's message", async (t) => {
  const schema = Type.Object({ when: Type.Boolean() })
  const [problem] = schemaProblems(schema, { when: 'yes' }, { ...WORDING, own: () => undefined })
  t.match(problem?.message, /^spec\.when "yes" is invalid: expected boolean/)
})
