-- Licensed under the Apache License, Version 2.0 (see LICENSE).
--
-- t/conf/seed.sql: the test suite's key store, loaded by build/run-suite
-- into the throwaway cluster after conf/schema.sql.  The keys are stored
-- as the database computes their hash, so the tests prove that the
-- gateway hashes a presented key the same way.

begin;

insert into organizations (id, name) values
    ('org-test', 'Test organization');

insert into projects (id, org_id, name, plan, db_kind, topology,
                      postgrest_target) values
    ('proj-a',         'org-test', 'Project A',         'pro',
     'postgres', 'shared',    null),
    ('proj-mongo',     'org-test', 'Project on MongoDB', 'free',
     'mongodb',  'shared',    null),
    -- Port 9 (discard): nothing listens there, connections are refused.
    ('proj-dedicated', 'org-test', 'Dedicated project',  'free',
     'postgres', 'dedicated', 'http://127.0.0.1:9');

insert into memberships (org_id, user_id, role) values
    ('org-test', 'user-owner',  'owner'),
    ('org-test', 'user-admin',  'admin'),
    ('org-test', 'user-member', 'member');

insert into api_keys (project_id, key_hash, role, revoked_at)
select project_id, encode(sha256(convert_to(k, 'UTF8')), 'hex'), role,
       revoked_at
  from (values
    ('proj-a',     'ak_test_anon_0123456789abcdef',     'anon',         null),
    ('proj-a',     'ak_test_service_0123456789abcdef',  'service_role', null),
    ('proj-a',     'ak_test_revoked_0123456789abcdef',  'anon',
     now() - interval '1 day'),
    -- A test revokes this one while the server runs.
    ('proj-a',     'ak_test_revokeme_0123456789abcdef', 'anon',         null),
    ('proj-mongo', 'ak_test_mongo_0123456789abcdef',    'anon',         null)
  ) as v (project_id, k, role, revoked_at);

-- The key lifecycle (issue #32, t/data/key_lifecycle.t,
-- t/data/key_last_used.t, t/mgmt/key_grace.t): expiry and scopes.
insert into api_keys (project_id, key_hash, role, expires_at, scopes)
select 'proj-a', encode(sha256(convert_to(k, 'UTF8')), 'hex'), 'anon',
       expires_at, scopes
  from (values
    ('ak_test_expired_0123456789abcdef',  now() - interval '1 day', null),
    ('ak_test_scope_fn_0123456789abcdef', null, '{functions}'::text[]),
    ('ak_test_scope_grp_0123456789abcdef', null, '{reports,auth}'::text[]),
    ('ak_test_scope_none_0123456789abcdef', null, '{}'::text[]),
    -- Tests change these while the server runs.
    ('ak_test_expiring_0123456789abcdef', null, null),
    ('ak_test_graceold_0123456789abcdef', null, null),
    ('ak_test_lastused_0123456789abcdef', null, null)
  ) as v (k, expires_at, scopes);

commit;
