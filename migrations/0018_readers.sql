-- Readers see what they may read, and a login per hotel (issue 25, point 2).
--
-- A reader role may be scoped to properties: `grant-reader <role> --properties 1024,7291`
-- records them here, and row-level security on the mirror's tables (applied after every
-- migration by src/store/reader-policy.ts, with the reader views and the grants) shows the
-- role those properties' rows only. NULL: every property.
ALTER TABLE reader_grants ADD COLUMN properties text[] CHECK (properties IS NULL OR cardinality(properties) BETWEEN 1 AND 1000);
COMMENT ON COLUMN reader_grants.properties IS 'The properties whose rows the role sees (grant-reader --properties); NULL: every property.';

-- The erasure key moves to a schema of its own, <mirror schema>_secret, on which no role but
-- the owner has any privilege: a reader with personal data may use the mirror's schema, and
-- must not even find the key there. The daemon's connections have it on their search_path
-- (src/store/database.ts), so the erasure code names the table as before. Its privileges are
-- revoked from every role but the owner after every migration (src/store/reader-policy.ts): a
-- release before reader_grants gave its readers default privileges that reached this table.
DO $$
DECLARE
  secret text := current_schema() || '_secret';
BEGIN
  EXECUTE format('CREATE SCHEMA %I', secret);
  EXECUTE format('REVOKE ALL ON SCHEMA %I FROM PUBLIC', secret);
  EXECUTE format('COMMENT ON SCHEMA %I IS %L', secret,
    'Secrets of the staysync mirror in schema ' || current_schema() || ' (the erasure key): no role but the owner may use this schema.');
  EXECUTE format('ALTER TABLE erasure_key SET SCHEMA %I', secret);
END
$$;
