/**
 * The payloads the mirror keeps (raw columns, quarantined bodies) as the replay reads them back.
 */
import { parseJsonLossless } from '../provider/json.js';

/**
 * A stored jsonb value, selected as text (`raw::text`), parsed so that numbers keep their exact
 * text: pg's own jsonb parser goes through JS floats and would lose digits and scale.
 */
export function decodeRaw(text: string | null): unknown {
  return text === null ? null : parseJsonLossless(text);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
