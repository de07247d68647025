/**
 * Bounds on text that one object copies from another it does not control (docs/cellpool.md,
 * "Status"): a machine's condition message, a node name, a device address. Whoever writes the
 * source (a provider, a compromised cell, a person with status rights) could make it a megabyte,
 * and a status that copies it once per cell would grow past what the API server stores. So text
 * is clipped to a documented length, and an identifier past its length is not copied at all: a
 * clipped name would name something else.
 */

/** The longest message a status copies (characters). */
export const MAX_MESSAGE_CHARS = 1024
/** The longest reason or condition type a status copies (characters). */
export const MAX_REASON_CHARS = 128
/** The longest name a status copies (characters): a DNS subdomain's. */
export const MAX_NAME_CHARS = 253

/**
 * `text` when it has at most `max` characters, else its first `max - 1` and `…`. Counted in
 * UTF-16 units, never fewer than the characters the API server counts; a cut never splits a
 * surrogate pair.
 */
export function clipText(text: string, max: number = MAX_MESSAGE_CHARS): string {
  if (text.length <= max) return text
  let end = max - 1
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end -= 1
  return `${text.slice(0, end)}…`
}

/** `name` when it has at most `max` characters, else undefined: an identifier is copied whole or not at all. */
export function nameWithin(name: string | undefined, max: number = MAX_NAME_CHARS): string | undefined {
  return name !== undefined && name.length <= max ? name : undefined
}
