/**
 * How the pool's problems quote what a spec says: short, on one line, whatever the input.
 */
import { canonicalJson } from '../k8s/hash.ts'

/** A value as a message shows it, at most 80 characters: strings bare, everything else as JSON. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return value === '' ? '""' : clip(value)
  if (value === undefined) return 'nothing'
  return clip(canonicalJson(value))
}

/** `text` cut to at most 80 characters. */
export function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}
