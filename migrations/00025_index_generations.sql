-- Index generations (DESIGN §7, invariant 11). A generation is one
-- embedding space: the provider's model, the vectors' dimensions and the
-- chunking they were cut with. index_generations registers them; exactly
-- one is active, the one search serves, which a unique index (at most
-- one) and a deferred constraint trigger (at least one, checked at
-- commit) hold even against the owner.
--
-- What the database held before this migration becomes generation 1,
-- active: its vectors stay in chunk_embeddings, whose contract does not
-- change, with the dimension recorded in sluice_settings and the model
-- the stored vectors name (the most common one; empty where nothing is
-- stored yet, which means "the services' EMBEDDER_MODEL"). Its chunking
-- was never recorded, so it stays NULL: the producer's CHUNK_SIZE,
-- CHUNK_OVERLAP and CHUNK_UNIT. Nothing is re-embedded.
--
-- The vectors of every later generation live side by side in one table,
-- generation_embeddings, keyed by (generation, doc_id, chunk_index). Its
-- embedding column carries no dimension (pgvector's vector, or real[]
-- without pgvector); a CHECK ties each row's length to its dims column,
-- and a foreign key ties (generation, dims) to the registry, so a vector
-- of the wrong size for its generation cannot be stored. One table means
-- static statements: a document's erasure deletes its rows of every
-- generation with one DELETE that cannot miss a generation created a
-- moment earlier, and no role below the owner needs CREATE. A generation's
-- nearest-neighbour index is a partial expression index,
-- ((embedding::vector(D))) WHERE generation = G, built later by the owner.
--
-- index_generation_audit records every create, activate and drop, dry
-- runs included, with who asked (the CLI's user and the database login)
-- and why; it is append-only below the owner.
--
-- Grants: sluice_operator (the sluice CLI) registers, activates and drops
-- generations, appends to the audit, reads and drops a generation's
-- vectors, and searches; the roles that erase documents (sluice_producer,
-- sluice_operator) delete a document's rows of every generation and read
-- only the keys that find them; sluice_console counts what is left of a
-- deleted document (doc_id). sluice_readonly reads all three tables by the
-- default privileges.

-- +goose Up
CREATE TABLE index_generations (
    generation    integer PRIMARY KEY CHECK (generation >= 1),
    model         text NOT NULL CHECK (model <> '' OR generation = 1),
    dims          integer NOT NULL CHECK (dims BETWEEN 1 AND 16000),
    chunk_size    integer CHECK (chunk_size >= 1),
    chunk_overlap integer CHECK (chunk_overlap >= 0 AND chunk_overlap < chunk_size),
    chunk_unit    text CHECK (chunk_unit IN ('tokens', 'chars')),
    status        text NOT NULL CHECK (status IN ('building', 'ready', 'active', 'retired', 'dropped')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    activated_at  timestamptz,
    retired_at    timestamptz,
    dropped_at    timestamptz,
    -- Chunking is recorded whole or not at all, and only generation 1
    -- (from before generations existed) may lack it.
    CHECK ((chunk_size IS NULL) = (chunk_unit IS NULL) AND (chunk_size IS NULL) = (chunk_overlap IS NULL)),
    CHECK (chunk_size IS NOT NULL OR generation = 1),
    CHECK (status <> 'active' OR activated_at IS NOT NULL),
    UNIQUE (generation, dims)
);
CREATE UNIQUE INDEX index_generations_one_active ON index_generations ((true)) WHERE status = 'active';

-- +goose StatementBegin
CREATE FUNCTION index_generations_one_active() RETURNS trigger
LANGUAGE plpgsql SET search_path = public, pg_catalog, pg_temp AS $$
BEGIN
    IF (SELECT count(*) FROM index_generations WHERE status = 'active') <> 1 THEN
        RAISE EXCEPTION 'exactly one index generation must be active'
            USING ERRCODE = 'check_violation', HINT = 'activate one generation in the transaction that retires another';
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION index_generations_one_active() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER index_generations_one_active
    AFTER INSERT OR UPDATE OR DELETE ON index_generations
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION index_generations_one_active();

INSERT INTO index_generations (generation, model, dims, status, activated_at)
SELECT 1,
       coalesce((SELECT model FROM chunk_embeddings GROUP BY model ORDER BY count(*) DESC, model LIMIT 1), ''),
       (SELECT value::integer FROM sluice_settings WHERE key = 'embedding_dims'),
       'active', now();

-- +goose StatementBegin
DO $$
DECLARE
    vec boolean := (SELECT value = 'vector' FROM sluice_settings WHERE key = 'vector_type');
BEGIN
    EXECUTE format($t$
        CREATE TABLE generation_embeddings (
            generation   integer NOT NULL CHECK (generation >= 2),
            doc_id       text NOT NULL,
            chunk_index  integer NOT NULL CHECK (chunk_index >= 0),
            version      bigint NOT NULL CHECK (version >= 1),
            content_hash text NOT NULL,
            model        text NOT NULL,
            dims         integer NOT NULL,
            embedding    %s NOT NULL CHECK (%s),
            text         text NOT NULL,
            metadata     jsonb NOT NULL DEFAULT '{}',
            updated_at   timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (generation, doc_id, chunk_index),
            FOREIGN KEY (generation, dims) REFERENCES index_generations (generation, dims)
        )$t$,
        CASE WHEN vec THEN 'vector' ELSE 'real[]' END,
        CASE WHEN vec THEN 'vector_dims(embedding) = dims'
             ELSE 'array_ndims(embedding) = 1 AND array_length(embedding, 1) = dims' END);
END $$;
-- +goose StatementEnd
-- Erasure finds a document's rows of every generation by doc_id.
CREATE INDEX generation_embeddings_doc ON generation_embeddings (doc_id);

CREATE TABLE index_generation_audit (
    audit_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    generation   integer,
    action       text NOT NULL CHECK (action IN ('create', 'activate', 'drop')),
    requested_by text NOT NULL CHECK (requested_by <> ''),
    login        text NOT NULL DEFAULT session_user,
    reason       text NOT NULL CHECK (reason <> ''),
    dry_run      boolean NOT NULL,
    forced       boolean NOT NULL DEFAULT false,
    detail       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX index_generation_audit_generation ON index_generation_audit (generation, at);

GRANT SELECT, INSERT ON index_generations TO sluice_operator;
GRANT UPDATE (status, activated_at, retired_at, dropped_at) ON index_generations TO sluice_operator;
GRANT SELECT, INSERT (generation, action, requested_by, reason, dry_run, forced, detail) ON index_generation_audit TO sluice_operator;
GRANT SELECT, DELETE ON generation_embeddings TO sluice_operator;
GRANT SELECT (doc_id), DELETE ON generation_embeddings TO sluice_producer;
GRANT SELECT (doc_id) ON generation_embeddings TO sluice_console;

-- +goose Down
DROP TABLE index_generation_audit;
DROP TABLE generation_embeddings;
DROP TABLE index_generations;
DROP FUNCTION index_generations_one_active();
