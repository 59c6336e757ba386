/**
 * A query run serially, then under a forced parallel plan, in one transaction (the same now()):
 * a view or function that is wrong or fails in parallel mode only (a function marked PARALLEL
 * SAFE that is not) shows here and nowhere else. The rows are compared as a count and a digest.
 */
import type pg from 'pg';

export interface BothWays {
  serial: unknown;
  /** The digest under the parallel plan, the error message it failed with, or a sentence when the planner made no parallel plan. */
  parallel: unknown;
  /** True when the planner made a parallel plan (a Gather). */
  gathered: boolean;
}

const digest = (text: string) => `SELECT count(*)::int AS n, md5(string_agg(x::text, '|' ORDER BY x::text)) AS digest FROM (${text}) x`;

/** `text` both ways on `client` (its search_path and role as they are). */
export async function serialAndParallel(client: pg.Client, text: string): Promise<BothWays> {
  const version = Number((await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0]!.v);
  const forceParallel = version >= 160000 ? 'debug_parallel_query' : 'force_parallel_mode';
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL max_parallel_workers_per_gather = 0');
    const serial = (await client.query(digest(text))).rows[0];
    for (const setting of [
      `${forceParallel} = on`,
      'max_parallel_workers_per_gather = 2',
      'parallel_setup_cost = 0',
      'parallel_tuple_cost = 0',
      'min_parallel_table_scan_size = 0',
      'min_parallel_index_scan_size = 0',
    ])
      await client.query(`SET LOCAL ${setting}`);
    const plan = (await client.query(`EXPLAIN ${digest(text)}`)).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
    if (!/Gather/.test(plan)) return { serial, parallel: `no parallel plan for ${text}`, gathered: false };
    const parallel = await client.query(digest(text)).then(
      (r) => r.rows[0] as unknown,
      (e: Error) => e.message,
    );
    return { serial, parallel, gathered: true };
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
  }
}
