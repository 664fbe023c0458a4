-- Re-cut index generations (DESIGN §9, invariant 11). A generation whose
-- chunking differs from the producer's cannot be backfilled from the
-- chunk text generation 1 holds: its chunks are other pieces of the
-- documents. It is recut: the producer cuts every document it reads,
-- changed or not, with the generation's chunking too, on the sources'
-- next runs, and records the cut here, in the transaction that records
-- the document's version (or marks it read). The backfill then embeds
-- the generation's chunks from this text, through the same queue,
-- durable, pipeline and parking as any later generation's.
--
-- generation_documents records which version of each document a recut
-- generation has cut, and into how many chunks: a document the sources
-- have not been run over since the generation was created, or since it
-- changed, has no row at its current version, and the generation owes
-- it until they are. generation_chunks holds each chunk of a cut, with
-- the text to embed and its source; a chunk that touches a secret is
-- withheld, its text never written, as generation 1 escalates it.
-- Erasing a document deletes both (invariant 10), and dropping the
-- generation deletes its rows.
--
-- Grants: the producer reads the registry and writes cuts and their
-- queue rows; the consumer reads them (backfill, progress) and deletes a
-- document's (erasure); the operator reads and deletes (status, drop,
-- erasure); the console reads what progress counts, never the text.

-- +goose Up
ALTER TABLE index_generations ADD COLUMN recut boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT index_generations_recut_later CHECK (NOT recut OR generation > 1);

CREATE TABLE generation_documents (
    generation  integer NOT NULL REFERENCES index_generations (generation) CHECK (generation >= 2),
    doc_id      text NOT NULL,
    version     bigint NOT NULL CHECK (version >= 1),
    chunk_count integer NOT NULL CHECK (chunk_count >= 0),
    cut_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (generation, doc_id)
);
CREATE INDEX generation_documents_doc ON generation_documents (doc_id);

CREATE TABLE generation_chunks (
    generation   integer NOT NULL,
    doc_id       text NOT NULL,
    chunk_index  integer NOT NULL CHECK (chunk_index >= 0),
    version      bigint NOT NULL CHECK (version >= 1),
    content_hash text NOT NULL,
    source_id    text NOT NULL,
    withheld     boolean NOT NULL DEFAULT false,
    text         text NOT NULL,
    metadata     jsonb NOT NULL DEFAULT '{}',
    cut_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (generation, doc_id, chunk_index),
    FOREIGN KEY (generation, doc_id) REFERENCES generation_documents (generation, doc_id) ON DELETE CASCADE,
    CHECK (NOT withheld OR text = '')
);
CREATE INDEX generation_chunks_doc ON generation_chunks (doc_id);

GRANT SELECT ON index_generations TO sluice_producer;
GRANT SELECT, INSERT, UPDATE, DELETE ON generation_documents, generation_chunks TO sluice_producer;
GRANT INSERT ON generation_backfill_queue TO sluice_producer;
GRANT SELECT, DELETE ON generation_documents, generation_chunks TO sluice_consumer, sluice_operator;
GRANT SELECT ON generation_documents TO sluice_console;
GRANT SELECT (generation, doc_id, chunk_index, version, content_hash, source_id, withheld, cut_at) ON generation_chunks TO sluice_console;
GRANT SELECT ON generation_documents, generation_chunks TO sluice_readonly;

-- +goose Down
DROP TABLE generation_chunks;
DROP TABLE generation_documents;
ALTER TABLE index_generations DROP COLUMN recut;
