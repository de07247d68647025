/**
 * Writes the product's CustomResourceDefinitions to `crds/<plural>.<group>.yaml`
 * (`npm run crds`), or with `--check` only reports which files are stale and exits 1.
 *
 * The YAML is written with pinned options (no line folding, YAML 1.1 quoting so that kubectl's
 * YAML 1.1 reader sees strings such as `on` or `0400` as strings, no anchors, keys in the order
 * the CRD object holds them), so a second run is byte-identical.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Document } from 'yaml'
import type { CustomResourceDefinition } from './crd.ts'
import { CRDS } from './crds.ts'

/** The repository's `crds/` folder. */
export const CRDS_DIR = fileURLToPath(new URL('../../crds/', import.meta.url))

const HEADER = ' Generated from hooks/api/*.ts by hooks/api/write-crds.ts (npm run crds). Do not edit.'

/** The file name of a CRD in `crds/`: `<plural>.<group>.yaml`. */
export function crdFileName(crd: CustomResourceDefinition): string {
  return `${crd.spec.names.plural}.${crd.spec.group}.yaml`
}

/** One CRD as the YAML text committed in `crds/`. */
export function renderCrdYaml(crd: CustomResourceDefinition): string {
  const doc = new Document(crd, { aliasDuplicateObjects: false, version: '1.1' })
  doc.commentBefore = HEADER
  return doc.toString({ lineWidth: 0, minContentWidth: 0, indent: 2, indentSeq: true })
}

/** Every CRD file: name → content. */
export function renderCrdFiles(): Map<string, string> {
  return new Map(CRDS.map((crd) => [crdFileName(crd), renderCrdYaml(crd)]))
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

function main(args: string[]): number {
  const check = args.includes('--check')
  let stale = 0
  for (const [name, text] of renderCrdFiles()) {
    const path = join(CRDS_DIR, name)
    if (readOrUndefined(path) === text) continue
    if (check) {
      stale += 1
      console.error(`crds/${name} is stale: run npm run crds`)
    } else {
      writeFileSync(path, text)
      console.log(`wrote crds/${name}`)
    }
  }
  return stale === 0 ? 0 : 1
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = main(process.argv.slice(2))
}
