/**
 * Throwaway PostgreSQL servers for tests: the product's own launcher (src/db/postgres-server.ts,
 * which also runs the local default database), with a temporary data directory that close()
 * removes and no fsync.
 */
export { startPostgresServer, withPostgresServer, type PostgresServer, type PostgresServerOptions } from '../../src/local-pg/postgres-server.js';
