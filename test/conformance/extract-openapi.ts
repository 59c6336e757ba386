/**
 * Extracts from the provider's full OpenAPI document the part the mirror reads: the GET
 * operations it calls (their servers, tags, summary and 200 response schema) and every
 * component schema reachable from those responses, unchanged. The result is the fixture the
 * conformance suite generates payloads from, so the suite runs without the full document.
 *
 *   npx node test/conformance/extract-openapi.ts <full-openapi.json> [out.json]
 *
 * (Node.js 24 runs this file directly: it uses only erasable TypeScript syntax.)
 * Rerun it when the provider publishes a new document, then rerun the suite.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** The operations the mirror calls, by path in the document (all GET). */
export const MIRRORED_PATHS = [
  // Read Reservation API
  '/v1/properties/{propertyId}/bookings',
  '/v1/properties/{propertyId}/bookings/{number}',
  // Content API
  '/v1/properties',
  '/v1/properties/{propertyId}',
  '/v1/properties/{propertyId}/cancellation-rules',
  '/v1/properties/{propertyId}/extra-stay-rules',
  '/v1/meal-plans',
  '/v1/room-type-categories',
  '/v1/room-amenity-categories',
  // Reference Data API
  '/payment-methods',
  '/property-amenity-types',
  '/property-kinds',
  // PMS API
  '/v2/properties/{propertyId}/reservations/{number}',
] as const;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

const SCHEMA_REF = '#/components/schemas/';

function isObject(v: Json | undefined): v is JsonObject {
  return v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v);
}

/** Names of the component schemas `root` refers to, directly or through other schemas. */
function reachableSchemas(roots: Json[], schemas: JsonObject): Set<string> {
  const seen = new Set<string>();
  const visit = (node: Json | undefined): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') {
        if (!value.startsWith(SCHEMA_REF)) throw new Error(`unsupported $ref ${value}`);
        const name = value.slice(SCHEMA_REF.length);
        if (seen.has(name)) continue;
        if (!(name in schemas)) throw new Error(`$ref to a missing schema: ${value}`);
        seen.add(name);
        visit(schemas[name]);
      } else {
        visit(value);
      }
    }
  };
  roots.forEach(visit);
  return seen;
}

export function extract(doc: JsonObject): JsonObject {
  const paths = doc.paths;
  const components = doc.components;
  if (!isObject(paths) || !isObject(components) || !isObject(components.schemas)) throw new Error('not an OpenAPI document with paths and component schemas');
  const schemas = components.schemas;
  const outPaths: JsonObject = {};
  const roots: Json[] = [];
  for (const path of MIRRORED_PATHS) {
    const item = paths[path];
    const get = isObject(item) ? item.get : undefined;
    const responses = isObject(get) ? get.responses : undefined;
    const ok = isObject(responses) ? responses['200'] : undefined;
    const content = isObject(ok) ? ok.content : undefined;
    const json = isObject(content) ? content['application/json'] : undefined;
    const schema = isObject(json) ? json.schema : undefined;
    if (!isObject(item) || !isObject(get) || schema === undefined) throw new Error(`GET ${path} with a JSON 200 response is not in the document`);
    roots.push(schema);
    outPaths[path] = {
      ...(item.servers !== undefined ? { servers: item.servers } : {}),
      get: {
        ...(get.tags !== undefined ? { tags: get.tags } : {}),
        ...(get.summary !== undefined ? { summary: get.summary } : {}),
        responses: {
          '200': { description: isObject(ok) && typeof ok.description === 'string' ? ok.description : 'OK', content: { 'application/json': { schema } } },
        },
      },
    };
  }
  const names = [...reachableSchemas(roots, schemas)].sort();
  return {
    openapi: doc.openapi ?? '3.0.0',
    info: {
      ...(isObject(doc.info) ? doc.info : {}),
      'x-subset': 'The operations staysync mirrors and the schemas they reach (test/conformance/extract-openapi.ts).',
    },
    paths: outPaths,
    components: { schemas: Object.fromEntries(names.map((n) => [n, schemas[n]!])) },
  };
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  const [source, target = new URL('../fixtures/openapi/exely-connect-mirrored.json', import.meta.url).pathname] = process.argv.slice(2);
  if (!source) {
    console.error('usage: node test/conformance/extract-openapi.ts <full-openapi.json> [out.json]');
    process.exit(2);
  }
  const subset = extract(JSON.parse(readFileSync(source, 'utf8')) as JsonObject);
  const text = JSON.stringify(subset);
  writeFileSync(target, text + '\n');
  const schemaCount = Object.keys((subset.components as { schemas: JsonObject }).schemas).length;
  console.log(`${target}: ${MIRRORED_PATHS.length} operations, ${schemaCount} schemas, ${text.length} bytes`);
}
