/** One connection and `SELECT 1`: whether a PostgreSQL server accepts this login now (the local server's supervisor asks it once the server says it is ready). */
import pg from 'pg';

export async function probeConnection(login: { host: string; port: number; user: string; password: string; database: string }): Promise<void> {
  const client = new pg.Client({ ...login, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}
