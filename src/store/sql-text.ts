/**
 * SQL text built by hand, for the statements that take no parameters (DDL, COMMENT, policies)
 * and for the fix-it commands printed in warnings: a name a role or table was given by someone
 * else (`bi"; DROP …`) reads as a name, never as SQL.
 */

/** A name as a quoted SQL identifier: always quoted, so a keyword or an upper-case letter stays a name. */
export const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** A text as a standard SQL string literal. */
export const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;
