-- Least privilege in PostgreSQL. Migrations run as the schema owner
-- (sluice migrate, MIGRATE_DATABASE_URL); services and the operator CLI
-- connect as members of sluice_runtime, which may read and write rows but
-- never create, alter, drop or truncate anything; reports may use
-- sluice_readonly, which reads every table but escalated_chunks, the one
-- place a secret's text is kept.
--
-- Roles belong to the cluster, not to a database, so they are created only
-- when missing, and a creation racing another database's migration counts
-- as done. They are NOLOGIN: give them LOGIN and a password (ALTER ROLE
-- sluice_runtime LOGIN PASSWORD '…'), or grant them to login roles. Where
-- the migrating owner may not create roles, a superuser creates the two
-- roles beforehand and this migration only grants.
--
-- Later migrations need no grants of their own: the default privileges
-- below give sluice_runtime DML and sluice_readonly SELECT on every table
-- and sequence the owner creates afterwards. A later table that holds
-- secret text must REVOKE SELECT from sluice_readonly (see migrations/doc.go).

-- +goose Up
-- +goose StatementBegin
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['sluice_runtime', 'sluice_readonly'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created meanwhile by a migration of another database
            END;
        END IF;
    END LOOP;
END $$;
-- +goose StatementEnd

GRANT USAGE ON SCHEMA public TO sluice_runtime, sluice_readonly;
REVOKE CREATE ON SCHEMA public FROM sluice_runtime, sluice_readonly;

GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO sluice_runtime;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO sluice_runtime;
-- The schema's version and its fixed settings are the owner's to change.
REVOKE INSERT, UPDATE, DELETE ON goose_db_version, sluice_settings FROM sluice_runtime;

GRANT SELECT ON ALL TABLES IN SCHEMA public TO sluice_readonly;
REVOKE ALL ON escalated_chunks FROM sluice_readonly;

ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO sluice_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO sluice_runtime;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO sluice_readonly;

-- +goose Down
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM sluice_runtime, sluice_readonly;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM sluice_runtime;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM sluice_runtime, sluice_readonly;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM sluice_runtime;
REVOKE USAGE ON SCHEMA public FROM sluice_runtime, sluice_readonly;
-- The roles stay: they belong to the cluster, and other databases may use
-- them.
