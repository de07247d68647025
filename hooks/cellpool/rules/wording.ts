/**
 * How the pool's problems quote a name or key a spec writes: short, whatever the input. A value is
 * quoted by describe (hooks/k8s/schema-messages.ts), as every controller quotes one.
 */

/** `text` cut to at most 80 characters. */
export function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}
