/** The provider client: HTTP, auth, budgets, schemas. */
export * from './budget.js';
export * from './client.js';
export * from './errors.js';
export * from './schemas/bookings.js';
export { TokenManager, type TokenManagerOptions } from './token.js';
