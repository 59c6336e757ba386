/**
 * The reporting layer: views in a schema of their own (config database.reportingSchema,
 * default `reporting`) over the mirror. Applied after the migrations by whoever migrates
 * (the writer, holding the lease); read-only commands never run it.
 */
import type { Db } from './database.js';

export interface ReportingLayerOptions {
  /** The mirror's schema (config database.schema). */
  schema: string;
  /** The schema that holds the reporting views (config database.reportingSchema). */
  reportingSchema: string;
}

export async function applyReportingLayer(_db: Db, _opts: ReportingLayerOptions): Promise<void> {
  // Filled in by the reporting work.
}
