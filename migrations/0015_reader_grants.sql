-- Reader roles see no personal data by default (issue 21, point 5). `grant-reader` gives a
-- role SELECT on the figures and leaves out the personal columns (src/store/personal-columns.ts)
-- unless it is run with --personal-data. The leaving out is done with column privileges, which
-- do not cover a column added later, so the roles granted are recorded here and their grants
-- are applied again after every migration (src/store/reader-role.ts).
CREATE TABLE reader_grants (
  role          text        PRIMARY KEY,
  personal_data boolean     NOT NULL,
  granted_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE reader_grants IS 'The read-only roles grant-reader made, whose grants are applied again after every migration.';
COMMENT ON COLUMN reader_grants.role IS 'The database role.';
COMMENT ON COLUMN reader_grants.personal_data IS 'True when granted with --personal-data: it may read the personal columns too.';
COMMENT ON COLUMN reader_grants.granted_at IS 'When grant-reader last granted it (UTC).';
