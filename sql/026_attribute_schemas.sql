-- The attributes an organisation declares (issue 45): a JSON Schema (2020-12) of its sources'
-- attributes, set by its editors through the API, every change a numbered version. The current
-- one is the highest version. Writes after it is set must satisfy it (the service validates);
-- sources written before are not re-validated (GET /organisations/{org}/attributes-schema/check
-- lists those that do not conform).

CREATE TABLE attribute_schemas (
  organisation text        NOT NULL,
  version      integer     NOT NULL
    CONSTRAINT attribute_schemas_version_positive CHECK (version >= 1),
  schema       json        NOT NULL
    CONSTRAINT attribute_schemas_schema_object CHECK (json_typeof(schema) = 'object'),
  set_by       text        NOT NULL,
  set_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT attribute_schemas_pkey PRIMARY KEY (organisation, version)
);

COMMENT ON TABLE attribute_schemas IS 'The JSON Schema (2020-12) each organisation declared for its sources'' attributes, every version of it; the current one is the highest version. An empty schema ({}) declares nothing.';
COMMENT ON COLUMN attribute_schemas.organisation IS 'The organisation whose sources'' attributes it describes.';
COMMENT ON COLUMN attribute_schemas.version IS '1 for the first, one more at each change.';
COMMENT ON COLUMN attribute_schemas.schema IS 'The JSON Schema of sources.attributes, as set (json: its text kept, members in their order): an object schema; its properties of simple types (string, number, integer, boolean; string with format date or date-time) are queryable and sortable, each with a typed view column and an index.';
COMMENT ON COLUMN attribute_schemas.set_by IS 'Who set it: the account''s e-mail.';
COMMENT ON COLUMN attribute_schemas.set_at IS 'When.';
