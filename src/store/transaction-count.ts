/**
 * The transactions this process commits or rolls back in the database, counted at its
 * connections (staysync_database_transactions_total): what following the properties costs the
 * database, as PostgreSQL's pg_stat_database.xact_commit counts it for the whole server, but for
 * this process alone (autovacuum, other processes and other databases left out). A statement
 * outside BEGIN … COMMIT is a transaction of its own.
 */
import type pg from 'pg';

export class TransactionCount {
  /** Transactions ended so far. */
  value = 0;

  /** Counts what `client` runs from now on. */
  watch(client: pg.Client | pg.PoolClient): void {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let open = false;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const first = args[0];
      const text = typeof first === 'string' ? first : typeof (first as { text?: unknown } | null)?.text === 'string' ? (first as { text: string }).text : '';
      const verb = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase();
      if (verb === 'begin' || verb === 'start') open = true;
      else if (verb === 'commit' || verb === 'rollback' || verb === 'end' || verb === 'abort') {
        if (open) this.value += 1;
        open = false;
      } else if (!open) this.value += 1;
      return query(...args);
    };
  }
}
