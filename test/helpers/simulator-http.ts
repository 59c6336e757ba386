/** Talking to the simulator over plain HTTP, as the simulator's own tests do. */
import { expect } from 'vitest';
import type { Simulator, SimulatorOptions } from '../../tools/simulator/index.js';

const generous = [{ limit: 1_000_000, windowMs: 1000 }];

/** Windows no test reaches, for tests that are not about rate limits. */
export const noLimits: SimulatorOptions['rateLimits'] = {
  bookingList: generous,
  bookingDetails: generous,
  standard: generous,
  token: generous,
};

export async function tokenResponse(sim: Simulator, form: Record<string, string>): Promise<Response> {
  return fetch(`${sim.url}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
}

/** An access token for the default simulator client. */
export async function accessToken(sim: Simulator): Promise<string> {
  const res = await tokenResponse(sim, { grant_type: 'client_credentials', client_id: 'sim-client', client_secret: 'sim-secret' });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** The three x-ratelimit-remaining-* headers of a response, second to hour. */
export const remainingHeaders = (res: Response): (string | null)[] => [
  res.headers.get('x-ratelimit-remaining-second'),
  res.headers.get('x-ratelimit-remaining-minute'),
  res.headers.get('x-ratelimit-remaining-hour'),
];
