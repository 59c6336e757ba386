/**
 * The schemas of one mirror: database.schema holds its tables, and staysync names two more
 * after it. Here, below the store, so that the configuration can refuse a reporting schema that
 * would be one of them (src/config/config.ts) and the store can make them (src/store/reader-policy.ts).
 */

/** The schema of the mirror's tables as views without personal columns: every reader may use it. */
export const readableSchemaOf = (schema: string): string => `${schema}_readable`;

/** The schema of the mirror's secrets (the erasure key): no role but the owner may use it. */
export const secretSchemaOf = (schema: string): string => `${schema}_secret`;

/** The schemas staysync names after the mirror's (to drop with it). */
export const schemasNamedAfter = (schema: string): string[] => [readableSchemaOf(schema), secretSchemaOf(schema)];

/** What the names above add to the mirror schema's name (database.schema is kept short enough for both). */
export const SCHEMA_SUFFIX_LENGTH = Math.max(readableSchemaOf('').length, secretSchemaOf('').length);
