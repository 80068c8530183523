-- Licensed under the Apache License, Version 2.0 (see LICENSE).
--
-- conf/migrations/0002-key-lifecycle.sql: API keys get an expiry,
-- scopes and a last-used time (issue #32; mod_aura 0.5.0).
--
-- For a key store created from an earlier conf/schema.sql (0001, the
-- schema without these columns).  A key store created from this
-- release's conf/schema.sql has them already; applying this file there
-- changes nothing.  Apply it BEFORE upgrading the gateway:
--   psql -v ON_ERROR_STOP=1 -X -q -d aura -f conf/migrations/0002-key-lifecycle.sql
-- Idempotent (add column if not exists, the constraint only when
-- missing), one transaction.  Existing rows keep working unchanged:
-- every new column is null, which means no expiry, every service, never
-- seen.  The earlier gateway ignores the columns, so the old and new
-- releases can run against a migrated key store during an upgrade.
--
-- A gateway of this release against a key store WITHOUT this migration
-- refuses to guess: its key lookup cannot be prepared, every key not
-- already cached gets 503 store-unavailable, and the error log says
-- AURA02403, naming this file.  It never accepts a key without
-- checking its expiry and scopes.

begin;

alter table api_keys add column if not exists expires_at   timestamptz null;
alter table api_keys add column if not exists scopes       text[] null;
alter table api_keys add column if not exists last_used_at timestamptz null;

do $$
begin
    if not exists (select 1 from pg_constraint
                   where conname = 'api_keys_scopes_names'
                     and conrelid = 'api_keys'::regclass) then
        alter table api_keys add constraint api_keys_scopes_names check (
            scopes is null
            or array_to_string(scopes, ',', '') ~ '^[A-Za-z0-9._-]{1,63}(,[A-Za-z0-9._-]{1,63})*$'
               and cardinality(scopes) = cardinality(
                   string_to_array(nullif(array_to_string(scopes, ',', ''), ''),
                                   ','))
            or scopes = '{}');
    end if;
end
$$;

commit;
