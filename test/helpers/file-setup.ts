/**
 * Runs before every integration file, in the file's own context (vitest runs setup files for each
 * file even when the files share their modules).
 */
import { afterAll } from 'vitest';
import { killLeftovers } from './cli.js';

afterAll(killLeftovers);
