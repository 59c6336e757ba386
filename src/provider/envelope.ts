/**
 * The `errors` and `warnings` of an answer. Every PMS body carries both (`[{code, message}]`,
 * each nullable), and the integration storage answers its errors as `{errors}`. What a 2xx with
 * a non-empty `errors` means the documents do not show, so the client takes it as a failed
 * request, never as an empty answer: its lists would otherwise mark rows removed. A warning is
 * "a non-critical issue": the answer is used, and the warning counted and said.
 */

/** One item of `errors` or `warnings`, as text: `code: message` (either may be missing). */
export interface EnvelopeItem {
  /** What the client tells kinds apart by: the code, else the message. */
  kind: string;
  text: string;
}

/** The longest text kept of one item: the provider's text goes into logs and `status`. */
const MAX_ITEM_TEXT = 200;
/** Items described at most; the others are counted. */
const MAX_ITEMS = 5;

/** The items of `body[key]` when it is a non-empty array; an empty list when it is anything else. */
export function envelopeItems(body: unknown, key: 'errors' | 'warnings'): EnvelopeItem[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  const list = (body as Record<string, unknown>)[key];
  if (!Array.isArray(list)) return [];
  return list.map((item) => {
    const { code, message } = (typeof item === 'object' && item !== null ? item : { message: item }) as { code?: unknown; message?: unknown };
    const c = typeof code === 'string' || typeof code === 'number' ? String(code) : '';
    const m = typeof message === 'string' ? message : message === undefined || message === null ? '' : JSON.stringify(message);
    const text = (c && m ? `${c}: ${m}` : c || m || 'no code, no message').replace(/\s+/g, ' ').trim();
    return { kind: (c || m || '?').slice(0, MAX_ITEM_TEXT), text: text.length > MAX_ITEM_TEXT ? `${text.slice(0, MAX_ITEM_TEXT)}…` : text };
  });
}

/** Items as one line for a log or an error: the first few, then how many more. */
export function describeItems(items: readonly EnvelopeItem[]): string {
  const shown = items.slice(0, MAX_ITEMS).map((i) => i.text);
  return items.length > MAX_ITEMS ? `${shown.join('; ')}; and ${items.length - MAX_ITEMS} more` : shown.join('; ');
}
