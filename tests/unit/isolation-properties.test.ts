/**
 * Properties of the isolation hooks over generated Settings, Instances and observed policies:
 * determinism, convergence through the API server's defaulting and Metacontroller's apply, and
 * nothing lost on a bad Setting value.
 */
import assert from 'node:assert/strict'
import t from 'tap'
import fc from 'fast-check'
import { parsePodCidrs } from '../../hooks/isolation/cidrs.ts'
import { customize } from '../../hooks/isolation/customize.ts'
import { sync, type IsolationSyncRequest } from '../../hooks/isolation/sync.ts'
import type { DecoratorResponse } from '../../hooks/metacontroller/schemas.ts'
import { LAST_APPLIED_ANNOTATION, type JsonObject } from '../support/merge.ts'
import { FakeServer } from '../support/fake-server.ts'
import { defaultOnUpdate } from '../support/server-defaults.ts'
import { simulateMetacontroller, type ObjectsByType } from '../support/simulate.ts'
import { reversedKeys } from '../support/fields.ts'

const NS = 'tenant-a'
const KEY = 'NetworkPolicy.networking.k8s.io/v1'
const POLICY_KEY = `${NS}/gpustack-instance-isolation`
const ANNOTATION = 'gpustack.ai/instance-isolation'
const DECORATOR = 'gpuhooks-instance-isolation'
const NAMESPACE: JsonObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, uid: 'ns-uid' } }

// ---- generated CIDRs, printed by an oracle independent of the hook's printer ----

function ipv4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 255n)).join('.')
}

/** RFC 5952 text as the WHATWG URL serializer writes an IPv6 host (same rule as Go's netip). */
function ipv6Text(value: bigint): string {
  const expanded = Array.from({ length: 8 }, (_, i) => ((value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':')
  return new URL(`http://[${expanded}]/`).hostname.slice(1, -1)
}

function masked(value: bigint, bits: number, width: number): bigint {
  return (value >> BigInt(width - bits)) << BigInt(width - bits)
}

interface GeneratedCidr {
  family: 4 | 6
  value: bigint
  bits: number
  text: string
}

/** Zero-heavy values, so that `::` compression gets exercised. */
const group = fc.oneof(fc.constant(0n), fc.constant(0n), fc.bigInt({ min: 0n, max: 0xffffn }))
const v6value = fc.array(group, { minLength: 8, maxLength: 8 }).map((gs) => gs.reduce((acc, g) => (acc << 16n) | g, 0n))

const cidr4: fc.Arbitrary<GeneratedCidr> = fc
  .tuple(fc.bigInt({ min: 0n, max: 0xffffffffn }), fc.integer({ min: 1, max: 32 }))
  .map(([v, bits]) => {
    const value = masked(v, bits, 32)
    return { family: 4 as const, value, bits, text: `${ipv4Text(value)}/${bits}` }
  })

const cidr6: fc.Arbitrary<GeneratedCidr> = fc
  .tuple(v6value, fc.integer({ min: 1, max: 128 }))
  .map(([v, bits]) => {
    const value = masked(v, bits, 128)
    return { family: 6 as const, value, bits, text: `${ipv6Text(value)}/${bits}` }
  })
  // IPv4-mapped addresses are refused by CEL's cidr(); the URL oracle also prints them differently.
  .filter((c) => c.value >> 32n !== 0xffffn)

const cidrList = fc.array(fc.oneof(cidr4, cidr6), { minLength: 1, maxLength: 6 })
const spaces = fc.constantFrom('', ' ', '  ', '\t')

/** A valid value: the CIDRs in any order, some repeated, with whitespace around entries. */
const validValue = fc
  .tuple(cidrList, fc.array(fc.tuple(spaces, spaces), { minLength: 12, maxLength: 12 }))
  .chain(([cidrs, pads]) =>
    fc
      .shuffledSubarray([...cidrs, ...cidrs], { minLength: cidrs.length })
      .map((entries) => entries.map((c, i) => `${pads[i % pads.length]?.[0] ?? ''}${c.text}${pads[i % pads.length]?.[1] ?? ''}`).join(','))
  )

const invalidEntry = fc.oneof(
  fc.constantFrom('pods', '10.244.0.1/16', 'FD00::/8', '0.0.0.0/0', '::/0', '10.0.0.0/33', '::ffff:10.0.0.0/104', '10.0.0.0/08', ''),
  fc.string({ maxLength: 12 }).filter((s) => !s.includes(',') && parsePodCidrs(s).state === 'invalid')
)
/** An invalid value: at least one bad entry among good ones. */
const invalidValue = fc
  .tuple(fc.array(cidr4, { maxLength: 2 }), invalidEntry, fc.array(cidr6, { maxLength: 2 }))
  .map(([a, bad, b]) => [...a.map((c) => c.text), bad, ...b.map((c) => c.text)].join(','))

const blankValue = fc.constantFrom(undefined, '', '   ', '\t')
const anyValue = fc.oneof(blankValue, validValue, invalidValue)

// ---- requests ----

interface State {
  setting: string | undefined
  instance: boolean
  terminating: boolean
}

function request(state: State, observed: ObjectsByType): IsolationSyncRequest {
  const object: IsolationSyncRequest['object'] = state.terminating
    ? {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: NS, uid: 'ns-uid', deletionTimestamp: '2026-01-02T00:00:00Z' },
        status: { phase: 'Terminating' }
      }
    : { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, uid: 'ns-uid' }, status: { phase: 'Active' } }
  return {
    object,
    attachments: structuredClone({ [KEY]: observed[KEY] ?? {} }) as unknown as IsolationSyncRequest['attachments'],
    related: {
      'Setting.gpustack.ai/v1alpha1':
        state.setting === undefined
          ? {}
          : { 'instance-isolation-pod-cidrs': { metadata: { name: 'instance-isolation-pod-cidrs' }, value: state.setting } },
      'Instance.worker.gpustack.ai/v1alpha1': state.instance
        ? { [`${NS}/box`]: { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', metadata: { name: 'box', namespace: NS } } }
        : {}
    }
  }
}

/** One sync and one Metacontroller pass over its answer. */
function pass(state: State, observed: ObjectsByType, server: FakeServer) {
  const answer = sync(request(state, observed))
  const applied = simulateMetacontroller({
    parent: NAMESPACE,
    observed,
    desired: answer.attachments,
    methods: { [KEY]: 'InPlace' },
    server,
    decorator: DECORATOR
  })
  return { answer, ...applied }
}

// ---- properties ----

t.test('determinism: the same request gives the same answer, byte for byte', async (t) => {
  const observedArb = fc.subarray(['current', 'narrowed', 'stray'] as const)
  fc.assert(
    fc.property(anyValue, anyValue, fc.boolean(), fc.boolean(), observedArb, (previous, setting, instance, terminating, kinds) => {
      // Observed policies as an earlier setting left them.
      const server = new FakeServer({ seed: 3 })
      let observed: ObjectsByType = { [KEY]: {} }
      observed = pass({ setting: previous, instance: true, terminating: false }, observed, server).observed
      const current = observed[KEY]?.[POLICY_KEY]
      const extra: Record<string, JsonObject> = {}
      if (current !== undefined && kinds.includes('narrowed')) {
        const narrowed = structuredClone(current)
        ;((narrowed.spec as JsonObject).podSelector as JsonObject).matchExpressions = [{ key: 'tier', operator: 'Exists' }]
        extra[POLICY_KEY] = narrowed
      }
      if (current !== undefined && kinds.includes('stray')) {
        const stray = structuredClone(current)
        ;(stray.metadata as JsonObject).name = 'older-name'
        extra[`${NS}/older-name`] = stray
      }
      if (!kinds.includes('current')) delete observed[KEY]?.[POLICY_KEY]
      observed = { [KEY]: { ...observed[KEY], ...extra } }
      const state = { setting, instance, terminating }
      const req = request(state, observed)
      const first = JSON.stringify(sync(req))
      // The same data with every key order reversed, and the same request again (no state kept).
      assert.equal(JSON.stringify(sync(reversedKeys(req))), first)
      assert.equal(JSON.stringify(sync(req)), first)
      assert.equal(JSON.stringify(customize({ parent: reversedKeys(req.object) })), JSON.stringify(customize({ parent: req.object })))
    }),
    { numRuns: 300 }
  )
  t.pass('300 generated requests answered identically')
})

type Event =
  | { kind: 'setting'; value: string | undefined }
  | { kind: 'instance'; present: boolean }
  | { kind: 'edit-rules' }
  | { kind: 'narrow-selector' }
  | { kind: 'start-deletion' }

const event: fc.Arbitrary<Event> = fc.oneof(
  { weight: 4, arbitrary: anyValue.map((value) => ({ kind: 'setting' as const, value })) },
  { weight: 2, arbitrary: fc.boolean().map((present) => ({ kind: 'instance' as const, present })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'edit-rules' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'narrow-selector' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'start-deletion' as const }) }
)

/** A hand edit of the observed policy (kubectl edit): an update by another manager. */
function handEdit(observed: ObjectsByType, server: FakeServer, change: (spec: JsonObject) => void): ObjectsByType {
  const current = observed[KEY]?.[POLICY_KEY]
  if (current === undefined) return observed
  const edited = structuredClone(current)
  change(edited.spec as JsonObject)
  return { ...observed, [KEY]: { ...observed[KEY], [POLICY_KEY]: defaultOnUpdate(current, edited, server) } }
}

t.test('convergence: after any sequence of changes, a second pass changes nothing', async (t) => {
  fc.assert(
    fc.property(fc.array(event, { minLength: 1, maxLength: 10 }), (events) => {
      const server = new FakeServer({ seed: 11 })
      let state: State = { setting: undefined, instance: false, terminating: false }
      let observed: ObjectsByType = { [KEY]: {} }
      for (const ev of events) {
        if (ev.kind === 'setting') state = { ...state, setting: ev.value }
        else if (ev.kind === 'instance') state = { ...state, instance: ev.present }
        else if (ev.kind === 'start-deletion') state = { ...state, terminating: true }
        else if (ev.kind === 'edit-rules')
          observed = handEdit(observed, server, (spec) => {
            spec.ingress = [{}]
          })
        else
          observed = handEdit(observed, server, (spec) => {
            ;(spec.podSelector as JsonObject).matchExpressions = [{ key: 'tier', operator: 'In', values: ['gold'] }]
          })

        const before = structuredClone(observed)
        const first = pass(state, observed, server)
        const parsed = parsePodCidrs(state.setting)
        if (state.terminating || parsed.state === 'invalid') {
          // Nothing lost: a bad value or a namespace on its way out creates and deletes nothing,
          // and changes nothing, a hand edit included (it stays as edited): at most, right after
          // a hand edit, the last-applied record is written to what is observed.
          assert.deepStrictEqual(Object.keys(first.observed[KEY] ?? {}), Object.keys(before[KEY] ?? {}))
          const edited = ev.kind === 'edit-rules' || ev.kind === 'narrow-selector'
          assert.ok(
            first.writes === 0 || (edited && first.writes === 1),
            `writes on ${JSON.stringify(state)}: ${first.operations.join('; ')}`
          )
          assert.deepStrictEqual(withoutRecord(first.observed), withoutRecord(before))
        }
        if (!state.terminating && parsed.state === 'on') {
          // The policy belongs to the namespace: once there it stays, with or without an Instance.
          const existed = before[KEY]?.[POLICY_KEY] !== undefined
          assert.equal(first.observed[KEY]?.[POLICY_KEY] !== undefined, state.instance || existed)
        }
        observed = first.observed
        const second = pass(state, observed, server)
        assert.equal(second.writes, 0, `second pass wrote: ${second.operations.join('; ')}`)
        assert.deepStrictEqual(second.observed, observed)
        assert.deepStrictEqual(second.answer, first.answer, 'the answer is stable once applied')
        checkOutcome(state, observed, second.answer)
      }
    }),
    { numRuns: 300 }
  )
  t.pass('300 generated histories converged')
})

/** The policies without what a write of the last-applied record alone changes on them. */
function withoutRecord(observed: ObjectsByType): ObjectsByType {
  const out = structuredClone(observed)
  for (const policy of Object.values(out[KEY] ?? {})) {
    const meta = policy.metadata as JsonObject
    for (const field of ['resourceVersion', 'generation', 'managedFields']) delete meta[field]
    delete (meta.annotations as JsonObject)[LAST_APPLIED_ANNOTATION]
  }
  return out
}

/** What the converged state must look like, from isolation.md's rule. */
function checkOutcome(state: State, observed: ObjectsByType, answer: DecoratorResponse): void {
  const parsed = parsePodCidrs(state.setting)
  const policy = observed[KEY]?.[POLICY_KEY]
  const note = answer.annotations?.[ANNOTATION]
  if (state.terminating) {
    assert.deepStrictEqual(answer.annotations, {})
    return
  }
  if (parsed.state === 'off') {
    assert.deepStrictEqual(observed[KEY], {}, 'a blank setting leaves no policy')
    assert.equal(note, null)
  } else if (parsed.state === 'invalid') {
    assert.ok(typeof note === 'string' && note.startsWith('error: '), `annotation ${String(note)}`)
  } else {
    if (state.instance) assert.ok(policy !== undefined, 'a namespace with an Instance has the policy')
    if (policy !== undefined) {
      const spec = policy.spec as JsonObject
      const except = (spec.ingress as JsonObject[])[0]?.from as JsonObject[]
      const blocks = except.filter((p) => p.ipBlock !== undefined).map((p) => (p.ipBlock as JsonObject).except)
      assert.deepStrictEqual(
        blocks,
        [parsed.cidrs.ipv4, parsed.cidrs.ipv6].filter((l) => l.length > 0)
      )
      const narrowed = (spec.podSelector as JsonObject).matchExpressions !== undefined
      assert.equal(note, narrowed ? 'drift: spec.podSelector.matchExpressions' : null)
    }
  }
}

t.test('a valid value parses to its CIDRs sorted, de-duplicated and split by family', async (t) => {
  fc.assert(
    fc.property(cidrList, fc.integer({ min: 0, max: 1000 }), (cidrs, seed) => {
      const shuffled = [...cidrs, ...cidrs].sort((a, b) => ((a.text.length * 31 + seed) % 7) - ((b.text.length * 31 + seed) % 7))
      const parsed = parsePodCidrs(shuffled.map((c) => ` ${c.text} `).join(','))
      const order = (a: GeneratedCidr, b: GeneratedCidr): number => (a.value === b.value ? a.bits - b.bits : a.value < b.value ? -1 : 1)
      const unique = (family: 4 | 6): string[] => [
        ...new Set(
          cidrs
            .filter((c) => c.family === family)
            .sort(order)
            .map((c) => c.text)
        )
      ]
      assert.deepStrictEqual(parsed, { state: 'on', cidrs: { ipv4: unique(4), ipv6: unique(6) } })
    }),
    { numRuns: 500 }
  )
  t.pass('500 generated lists parsed')
})

t.test('an IPv6 CIDR written out in full is refused unless that is its canonical text', async (t) => {
  fc.assert(
    fc.property(cidr6, fc.boolean(), (c, upper) => {
      let full = Array.from({ length: 8 }, (_, i) => ((c.value >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, '0')).join(':')
      if (upper) full = full.toUpperCase()
      const parsed = parsePodCidrs(`${full}/${c.bits}`)
      if (`${full}/${c.bits}` === c.text) assert.equal(parsed.state, 'on')
      else
        assert.deepStrictEqual(parsed, {
          state: 'invalid',
          errors: [`entry 1 "${full}/${c.bits}" is not in canonical form; write ${c.text}`]
        })
    }),
    { numRuns: 500 }
  )
  t.pass('500 generated IPv6 CIDRs checked against the URL serializer')
})
