-- Licensed under the Apache License, Version 2.0 (see LICENSE).
--
-- conf/schema.sql: the mod_aura key store (PostgreSQL 15).
--
-- Load it once into an empty database:
--   psql -v ON_ERROR_STOP=1 -X -q -d aura -f conf/schema.sql
-- Plain CREATE statements in one transaction: a second load fails on the
-- first CREATE and, with ON_ERROR_STOP, changes nothing; a load that
-- fails half-way leaves nothing behind.

begin;

create table organizations (
    id          text primary key,
    name        text not null,
    created_at  timestamptz not null default now()
);

create table projects (
    id                text primary key,
    org_id            text not null references organizations (id),
    name              text not null,
    plan              text not null default 'free',
    db_kind           text not null default 'postgres'
                      check (db_kind in ('postgres', 'mongodb')),
    topology          text not null default 'shared'
                      check (topology in ('shared', 'dedicated')),
    -- Where a dedicated project's PostgREST listens, e.g.
    -- http://10.0.0.5:3000.  A dedicated project may not have one yet
    -- (null: unresolved, requests get a 503); a shared project never has
    -- one: it is served by the shared upstream.
    postgrest_target  text null,
    created_at        timestamptz not null default now(),
    constraint projects_target_only_dedicated
        check (topology = 'dedicated' or postgrest_target is null)
);

-- Deleting an organization is refused while it has projects: this index
-- makes that check (and "the projects of an org") an index lookup.
create index projects_org_id_idx on projects (org_id);

-- The primary key (org_id, user_id) serves both "the role of this user in
-- this org" and "the members of this org".
create table memberships (
    org_id   text not null references organizations (id) on delete cascade,
    user_id  text not null,
    role     text not null check (role in ('owner', 'admin', 'member')),
    primary key (org_id, user_id)
);

-- API keys are stored only as the SHA-256 of the key, never in clear.
-- A key is a long random string (at least 128 bits from a CSPRNG), so a
-- plain unsalted hash is enough: there is no dictionary to precompute
-- and brute force is out of reach, and without a salt the hash of a
-- presented key is its lookup value (one equality lookup per request,
-- no scan, no per-row KDF).  Salts and slow hashes are for low-entropy
-- passwords, not for keys like these.
--
-- Revoking a key sets revoked_at and keeps the row: who had which key
-- and when it stopped working stays on record (audit), and the hash
-- cannot be issued again (unique).
create table api_keys (
    id          bigserial primary key,
    project_id  text not null references projects (id) on delete cascade,
    -- Lowercase hex SHA-256 of the key.
    key_hash    text not null unique check (key_hash ~ '^[0-9a-f]{64}$'),
    role        text not null check (role in ('anon', 'service_role')),
    created_at  timestamptz not null default now(),
    revoked_at  timestamptz null,
    -- The key's lifecycle (issue #32; an existing key store gets these
    -- columns from conf/migrations/0002-key-lifecycle.sql).
    -- The first instant the key no longer works; null: never.  A key
    -- rotated with a grace period keeps working until then.
    expires_at    timestamptz null,
    -- The services (the first word of AuraService: auth, db, storage,
    -- functions, realtime, notifications, ai, provisioner, control) and
    -- Location groups (AuraKeyScope) the key may call; null: every one.
    -- Each name 1 to 63 of [A-Za-z0-9._-]; '{}' calls nothing.
    scopes        text[] null,
    -- When a gateway last accepted the key, written in batches
    -- (AuraKeyLastUsedInterval): approximate, never earlier than the
    -- real last use by more than that interval.
    last_used_at  timestamptz null,
    constraint api_keys_scopes_names check (
        scopes is null
        or array_to_string(scopes, ',', '') ~ '^[A-Za-z0-9._-]{1,63}(,[A-Za-z0-9._-]{1,63})*$'
           and cardinality(scopes) = cardinality(
               string_to_array(nullif(array_to_string(scopes, ',', ''), ''),
                               ','))
        or scopes = '{}')
);

-- The gateway's lookup,
--   select ... from api_keys where key_hash = $1 and revoked_at is null
-- is served by the index behind the unique constraint on key_hash (at
-- most one row matches; revoked_at is checked on that row): a second,
-- partial index on key_hash would only cost writes.

-- Deleting a project cascades to its keys, and the management plane
-- lists a project's keys: both look keys up by project.
create index api_keys_project_id_idx on api_keys (project_id);

commit;
