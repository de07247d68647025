import t from 'tap'
import { parseRegistration, podDeviceCount, type RegisteredDevices } from '../../hooks/agent/hami.ts'

const A100 = 'NVIDIA-NVIDIA A100-SXM4-80GB'

const registrations: Array<{ name: string; given: string | undefined; expected: RegisteredDevices }> = [
  { name: 'no annotation is Missing', given: undefined, expected: { registration: 'Missing', devices: [] } },
  {
    name: 'the JSON array reads id, type, devmem, devcore and health',
    given: JSON.stringify([
      { id: 'GPU-a', count: 10, devmem: 81920, devcore: 100, type: A100, numa: 0, health: true, index: 0, mode: 'hami-core' }
    ]),
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: A100, memoryMiB: 81920, cores: 100, healthy: true }] }
  },
  {
    name: 'a JSON device without health (Go omits false) is unhealthy',
    given: JSON.stringify([{ id: 'GPU-a', devmem: 1024, devcore: 50, type: 'T' }]),
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: 'T', memoryMiB: 1024, cores: 50, healthy: false }] }
  },
  {
    name: 'a JSON device whose health is the string "true" is unhealthy',
    given: JSON.stringify([{ id: 'GPU-a', devmem: 1024, devcore: 50, type: 'T', health: 'true' }]),
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: 'T', memoryMiB: 1024, cores: 50, healthy: false }] }
  },
  { name: 'an empty JSON array is Parsed with no devices', given: '[]', expected: { registration: 'Parsed', devices: [] } },
  {
    name: 'records of 7 fields (uuid,count,mem,cores,type,numa,health)',
    given: `GPU-a,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:GPU-b,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,1,false:`,
    expected: {
      registration: 'Parsed',
      devices: [
        { id: 'GPU-a', type: 'NVIDIA-Tesla V100-PCIE-32GB', memoryMiB: 32768, cores: 100, healthy: true },
        { id: 'GPU-b', type: 'NVIDIA-Tesla V100-PCIE-32GB', memoryMiB: 32768, cores: 100, healthy: false }
      ]
    }
  },
  {
    name: 'records of 9 fields (plus index, mode)',
    given: `GPU-a,4,81920,100,${A100},0,true,0,hami-core:`,
    expected: { registration: 'Parsed', devices: [{ id: 'GPU-a', type: A100, memoryMiB: 81920, cores: 100, healthy: true }] }
  },
  {
    name: 'records of 8 fields are Unparseable',
    given: `GPU-a,4,81920,100,${A100},0,true,0:`,
    expected: { registration: 'Unparseable', devices: [] }
  },
  {
    name: 'a record with a non-numeric memory is Unparseable',
    given: `GPU-a,4,lots,100,${A100},0,true:`,
    expected: { registration: 'Unparseable', devices: [] }
  },
  {
    name: 'a record with a health that is not a Go bool is Unparseable',
    given: `GPU-a,4,1,100,${A100},0,yes:`,
    expected: { registration: 'Unparseable', devices: [] }
  },
  { name: 'garbage text is Unparseable', given: 'hello world', expected: { registration: 'Unparseable', devices: [] } },
  { name: 'a JSON object (not an array) is Unparseable', given: '{"id":"GPU-a"}', expected: { registration: 'Unparseable', devices: [] } },
  { name: 'a JSON device without id is Unparseable', given: '[{"devmem":1}]', expected: { registration: 'Unparseable', devices: [] } },
  {
    name: 'a JSON device with a fractional devmem is Unparseable',
    given: '[{"id":"a","devmem":1.5}]',
    expected: { registration: 'Unparseable', devices: [] }
  },
  { name: 'the empty string is Unparseable', given: '', expected: { registration: 'Unparseable', devices: [] } }
]

for (const c of registrations) {
  t.test(c.name, async (t) => {
    t.same(parseRegistration(c.given), c.expected)
  })
}

const podAnnotations: Array<{ name: string; given: string | undefined; expected: number | undefined }> = [
  { name: 'an absent Pod annotation names no device', given: undefined, expected: 0 },
  { name: 'one container, one device', given: 'GPU-a,NVIDIA,3000,30:;', expected: 1 },
  {
    name: 'two devices in one container and one in another',
    given: 'GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,3000,30:;GPU-c,NVIDIA,1,1:;',
    expected: 3
  },
  { name: 'the device plugin\'s emptied value ";" names no device', given: ';', expected: 0 },
  { name: 'an emptied value for two containers ";;" names no device', given: ';;', expected: 0 },
  { name: 'a device with too few fields does not decode', given: 'GPU-a,NVIDIA:;', expected: undefined },
  { name: 'a device with a non-numeric memory does not decode', given: 'GPU-a,NVIDIA,x,30:;', expected: undefined }
]

for (const c of podAnnotations) {
  t.test(c.name, async (t) => {
    t.equal(podDeviceCount(c.given), c.expected)
  })
}
