-- A later generation's nearest-neighbour index (DESIGN §9, invariant 11).
-- Its vectors share generation_embeddings with every other later
-- generation, whatever their dimensions, so its index is a partial
-- expression index: HNSW for cosine distance on the column cast to the
-- generation's dimension, over the generation's rows only, the very
-- expression a search of the generation orders by. Building an index
-- needs the table's owner, so the owner builds it through
-- build_generation_index and removes it through drop_generation_index,
-- SECURITY DEFINER functions only sluice_operator (the sluice CLI) may
-- execute. Each takes one integer, the generation; the dimension comes
-- from the registry, never from the caller, and every name and number in
-- the statements they run is built from integers.
--
-- The audit records a build too.
--
-- The console's overview shows each generation's progress as sluice index
-- status measures it (internal/generation.ProgressOf): sluice_console
-- reads the registry and the keys of every generation's vectors (doc_id,
-- chunk_index, version, content_hash, and the generation), never their
-- text or embedding.

-- +goose Up
ALTER TABLE index_generation_audit DROP CONSTRAINT index_generation_audit_action_check,
    ADD CONSTRAINT index_generation_audit_action_check CHECK (action IN ('create', 'activate', 'drop', 'build'));

-- +goose StatementBegin
CREATE FUNCTION build_generation_index(gen integer) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    d integer;
    st text;
BEGIN
    IF gen IS NULL OR gen < 2 THEN
        RAISE EXCEPTION 'generation % has no partial index: only generations from 2 keep their vectors in generation_embeddings', gen
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (SELECT value FROM sluice_settings WHERE key = 'vector_type') IS DISTINCT FROM 'vector' THEN
        RAISE EXCEPTION 'no vector index without pgvector: the embedding column is real[]'
            USING ERRCODE = 'feature_not_supported', HINT = 'install pgvector and migrate a new database';
    END IF;
    SELECT dims, status INTO d, st FROM index_generations WHERE generation = gen;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown index generation %', gen USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF st = 'dropped' THEN
        RAISE EXCEPTION 'index generation % was dropped: it has no vectors to index', gen USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- pgvector's HNSW indexes vectors of at most 2,000 dimensions.
    IF d > 2000 THEN
        RAISE EXCEPTION 'index generation % has % dimensions: an HNSW index takes at most 2000', gen, d
            USING ERRCODE = 'feature_not_supported', HINT = 'search scans the generation''s rows without an index';
    END IF;
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON generation_embeddings USING hnsw ((embedding::vector(%s)) vector_cosine_ops) WHERE generation = %s',
                   'generation_embeddings_g' || gen || '_hnsw', d, gen);
    -- The planner keeps scanning every row until its statistics count
    -- the rows loaded.
    ANALYZE generation_embeddings, documents;
    RETURN 'generation_embeddings_g' || gen || '_hnsw';
END $$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION build_generation_index(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION build_generation_index(integer) TO sluice_operator;

-- +goose StatementBegin
CREATE FUNCTION drop_generation_index(gen integer) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    name text := 'generation_embeddings_g' || gen || '_hnsw';
BEGIN
    IF gen IS NULL OR gen < 2 THEN
        RAISE EXCEPTION 'generation % has no partial index: only generations from 2 keep their vectors in generation_embeddings', gen
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF to_regclass(name) IS NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP INDEX %I', name);
    RETURN true;
END $$;
-- +goose StatementEnd
REVOKE ALL ON FUNCTION drop_generation_index(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION drop_generation_index(integer) TO sluice_operator;

GRANT SELECT ON index_generations TO sluice_console;
GRANT SELECT (version) ON chunk_embeddings TO sluice_console;
GRANT SELECT (generation, chunk_index, version, content_hash) ON generation_embeddings TO sluice_console;

-- +goose Down
REVOKE SELECT (generation, chunk_index, version, content_hash) ON generation_embeddings FROM sluice_console;
REVOKE SELECT (version) ON chunk_embeddings FROM sluice_console;
REVOKE SELECT ON index_generations FROM sluice_console;
DROP FUNCTION drop_generation_index(integer);
DROP FUNCTION build_generation_index(integer);
-- The audit keeps its build rows, and so the CHECK that admits them; the
-- indexes built stay until their generations are dropped.
