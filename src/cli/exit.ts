/** How the process ends: its exit statuses, and which failures end it with a sentence rather than a stack trace. */
import { ConfigError } from '../config/config.js';
import { DatabaseConfigurationError, DatabaseUnavailableError, HeldElsewhereError, LocalServerError } from '../store/errors.js';
import { OpsPortError } from '../ops/http.js';
import { AuthenticationError } from '../provider/errors.js';
import { DatabaseGaveUpError, ProviderGaveUpError } from '../sync/runtime/errors.js';

export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  /** sync --once: a property's booking list lost its token and waits for a recovery (everything else was synced); `run` goes on instead. */
  continueTokenLost: 3,
  /** forget-guest: nobody in the mirror matched the selector (nothing erased; an e-mail, phone or person id still joins the erasure list). */
  nobodyFound: 4,
} as const;

/** True for errors that end the process with a sentence, not a stack trace. */
export function isExpectedFailure(err: unknown): boolean {
  return (
    err instanceof ConfigError ||
    err instanceof AuthenticationError ||
    err instanceof DatabaseConfigurationError ||
    err instanceof DatabaseUnavailableError ||
    err instanceof DatabaseGaveUpError ||
    err instanceof ProviderGaveUpError ||
    err instanceof HeldElsewhereError ||
    err instanceof OpsPortError ||
    err instanceof LocalServerError
  );
}
