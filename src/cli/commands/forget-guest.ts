/** `forget-guest`: erase one guest's personal data on request (src/privacy/forget-guest.ts). */
import { openConfiguredDatabase } from '../../local-pg/open-database.js';
import { forgetGuest, parseSelector, SelectorError, type SelectorKind } from '../../privacy/forget-guest.js';
import { ExitCode } from '../exit.js';
import { rethrowDatabase, schemaIsCurrent, type CommandEnv } from './env.js';

/**
 * Erases the guest the selector names and prints what it changed, table by table (never the
 * values); exit status 4 when nobody in the mirror matches. Needs the schemas (run or migrate
 * first). It takes the erasure lock, not the daemon's lease: it runs beside a running daemon,
 * whose writes of guest data wait only while the guest joins the erasure list (milliseconds)
 * and then erase the guest themselves.
 */
export async function forgetGuestCommand(env: CommandEnv, selectorArg: { kind: SelectorKind; value: string }, dryRun: boolean): Promise<number> {
  let selector;
  try {
    selector = parseSelector(selectorArg.kind, selectorArg.value);
  } catch (err) {
    if (!(err instanceof SelectorError)) throw err;
    process.stderr.write(`staysync: ${err.message}\n`);
    return ExitCode.usage;
  }
  const h = await openConfiguredDatabase(env.config, env.logger);
  try {
    if (!(await schemaIsCurrent(env, h))) return ExitCode.failure;
    const r = await forgetGuest(h.db, selector, { dryRun, pseudonymKey: env.config.privacy.pseudonymKey }).catch((err: unknown) => rethrowDatabase(err, h));
    const tables = Object.entries(r.rowsTouched).sort(([a], [b]) => a.localeCompare(b));
    const total = tables.reduce((n, [, v]) => n + v, 0);
    // The selector is not echoed (an e-mail in a terminal's scrollback or a job's log), but a booking is no personal data.
    const who = selector.kind === 'booking' ? `the guests of booking ${selector.value}` : `the guest selected by ${selector.kind}`;
    if (!r.found) {
      // Its own exit status: a request for a guest the mirror does not hold may be a typing error, which a script must not take for done.
      const listed =
        selector.kind === 'booking' || dryRun
          ? ''
          : ` The ${selector.kind === 'person' ? 'PMS person id' : selector.kind} joins the erasure list all the same (erasure ${r.erasureId}): a version that brings it later is stored erased.`;
      env.out(`${dryRun ? 'Dry run: ' : ''}forget-guest found nobody: no row of the mirror holds ${who}.${listed}`);
      return ExitCode.nobodyFound;
    }
    if (dryRun) env.out(`Dry run: nothing was changed. Erasing ${who} would change ${total} rows (${r.persons} persons found):`);
    else env.out(`Erased ${who}: ${total} rows changed (${r.persons} persons found), logged as erasure ${r.erasureId}:`);
    for (const [table, n] of tables) env.out(`  ${table.padEnd(30)} ${String(n).padStart(6)}`);
    if (!dryRun) env.out('Versions of these bookings and reservations fetched from now on are stored with this guest erased.');
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}
