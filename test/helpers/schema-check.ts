/**
 * A checker of values against compact copies of the provider's schemas (required fields, field
 * types, nullability, enums), written into the tests that need them: "T?" is nullable, "T[]" an
 * array, "@Name" another schema. A field the schema does not list is an error: field names
 * must be exactly the provider's.
 */

export type SchemaDef = { enum: string[] } | { required: string[]; props: Record<string, string> };

function check(SCHEMAS: Record<string, SchemaDef>, value: unknown, type: string, at: string, problems: string[]): void {
  const nullable = type.endsWith('?');
  const t = nullable ? type.slice(0, -1) : type;
  if (value === null) {
    if (!nullable) problems.push(`${at}: null`);
    return;
  }
  if (t.endsWith('[]')) {
    if (!Array.isArray(value)) problems.push(`${at}: not an array`);
    else value.forEach((v, i) => check(SCHEMAS, v, t.slice(0, -2), `${at}[${i}]`, problems));
    return;
  }
  if (t.startsWith('@')) {
    const def = SCHEMAS[t.slice(1)];
    if (!def) throw new Error(`no schema ${t}`);
    if ('enum' in def) {
      if (typeof value !== 'string' || !def.enum.includes(value)) problems.push(`${at}: ${JSON.stringify(value)} is not one of ${t}`);
      return;
    }
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push(`${at}: not an object`);
      return;
    }
    const o = value as Record<string, unknown>;
    for (const k of def.required) if (!(k in o)) problems.push(`${at}.${k}: required, missing`);
    for (const [k, v] of Object.entries(o)) {
      const pt = def.props[k];
      if (pt === undefined) problems.push(`${at}.${k}: not a field of ${t.slice(1)}`);
      else check(SCHEMAS, v, pt, `${at}.${k}`, problems);
    }
    return;
  }
  const [base, format] = t.split(':');
  const ok =
    base === 'string'
      ? typeof value === 'string' && (format !== 'date' || /^\d{4}-\d{2}-\d{2}$/.test(value))
      : base === 'number'
        ? typeof value === 'number' && Number.isFinite(value)
        : base === 'integer'
          ? Number.isInteger(value)
          : base === 'boolean'
            ? typeof value === 'boolean'
            : typeof value === 'object';
  if (!ok) problems.push(`${at}: ${JSON.stringify(value)} is not ${t}`);
}

/** What does not fit schema `name` of `schemas` in `value` (empty when it fits). */
export function schemaProblemsIn(schemas: Record<string, SchemaDef>, value: unknown, name: string): string[] {
  const problems: string[] = [];
  check(schemas, value, `@${name}`, name, problems);
  return problems;
}
