/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_quota_script.h: the Lua script of the actor quota, in one place
 * for the module (aura_redis.c) and bench/ratelimit_cost.c, which must
 * send the same text (its SHA-1 names it in EVALSHA).  Included once
 * per program.
 */
#ifndef AURA_QUOTA_SCRIPT_H
#define AURA_QUOTA_SCRIPT_H

/* KEYS[1]: the actor's key prefix, with a hash tag.  ARGV[1]: the limit
 * (requests per window, >= 1).  ARGV[2]: the window w in ms (>= 1).
 * ARGV[3]: how many requests to admit at once, n >= 1 (a lease, see
 * aura_limit_actor.c).  ARGV[4..7], optional, a hand-over (aura_quota_share.h):
 * h requests this instance admitted locally while Redis was away, in
 * window number hw, where it had last seen a count of f, and the number
 * of instances N.
 *
 * Two fixed windows, the current one (count c, elapsed e ms) and the one
 * before (count p); the previous one is weighted by the part of it that
 * still overlaps a window of w ms ending now:
 *     estimate = p * (w - e) / w + c
 * A request is admitted iff estimate + 1 <= limit, which is computed
 * multiplied by w ("left") so that the test is exact in integers; k more
 * fit iff estimate + k <= limit, so min(n, floor(left / w) + 1) are
 * granted and counted.
 *
 * The hand-over, before deciding, when hw is one of the two windows: the
 * window's count is raised to f if below (Redis restarted empty: f is a
 * count it gave itself), then the h requests are added.  The first
 * instance to hand over in a window also reserves (N - 1) * h for the
 * others, assuming each used its share as this one did (the share
 * itself rests on an even spread); a later hand-over takes its h out of
 * that reservation first and adds only what exceeds it.  So an instance
 * whose breaker is still open when another one returns cannot make the
 * window exceed the limit by its local admissions; what is reserved for
 * an instance that never went local stays counted (the window admits
 * less, never more).  The reservation lives in "<window key>:r".
 *
 * Returns {granted, remaining, reset_ms, retry_after_ms, count, window}:
 * remaining is what is left after the granted ones, count the current
 * window's count after this call and window its number (the gateway
 * keeps both for its fallback).  Lua numbers are truncated towards zero
 * on the way out: every result is floored or ceiled here, explicitly.
 * Redis 7 replicates a script by its effects, so TIME before a write is
 * allowed. */
static const char quota_script[] =
    "local limit = tonumber(ARGV[1])\n"
    "local w = tonumber(ARGV[2])\n"
    "local n = tonumber(ARGV[3] or '1')\n"
    "if not limit or not w or not n or limit < 1 or w < 1 or n < 1 then\n"
    "    return redis.error_reply('ERR aura quota: bad limit, window or count')\n"
    "end\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local cur = math.floor(now / w)\n"
    "local e = now - cur * w\n"
    "local ckey = KEYS[1] .. ':' .. string.format('%d', cur)\n"
    "local pkey = KEYS[1] .. ':' .. string.format('%d', cur - 1)\n"
    "local h = tonumber(ARGV[4] or '0') or 0\n"
    "local hw = tonumber(ARGV[5] or '0') or 0\n"
    "if h > 0 and (hw == cur or hw == cur - 1) then\n"
    "    local hkey = hw == cur and ckey or pkey\n"
    "    local f = tonumber(ARGV[6] or '0') or 0\n"
    "    local inst = math.max(1, tonumber(ARGV[7] or '1') or 1)\n"
    "    local ttl = (hw + 2) * w - now\n"
    "    local add = math.max(0, f - tonumber(redis.call('GET', hkey) or '0'))\n"
    "    local r = redis.call('GET', hkey .. ':r')\n"
    "    if r then\n"
    "        local take = math.min(h, tonumber(r))\n"
    "        if take > 0 then redis.call('DECRBY', hkey .. ':r', take) end\n"
    "        add = add + h - take\n"
    "    else\n"
    "        add = add + h * inst\n"
    "        redis.call('SET', hkey .. ':r', h * (inst - 1), 'PX', ttl)\n"
    "    end\n"
    "    if add > 0 then\n"
    "        redis.call('INCRBY', hkey, add)\n"
    "        redis.call('PEXPIRE', hkey, ttl)\n"
    "    end\n"
    "end\n"
    "local c = tonumber(redis.call('GET', ckey) or '0')\n"
    "local p = tonumber(redis.call('GET', pkey) or '0')\n"
    "local left = (limit - c - 1) * w - p * (w - e)\n"
    "if left >= 0 then\n"
    "    local k = math.min(n, math.floor(left / w) + 1)\n"
    "    redis.call('INCRBY', ckey, k)\n"
    "    redis.call('PEXPIRE', ckey, 2 * w)\n"
    "    return {k, math.floor(left / w) - (k - 1), w - e, 0, c + k, cur}\n"
    "end\n"
    /* Refused, nothing written.  c + 1 > limit: not in this window;
     * in the next one c becomes the previous count, and a request passes
     * once c * (w - e') / w + 1 <= limit.  Otherwise it passes later in
     * this window, once the previous window weighs little enough. */
    "local retry\n"
    "if c + 1 > limit then\n"
    "    retry = (w - e) + math.ceil(math.max(0, w * (c - limit + 1)) / c)\n"
    "else\n"
    "    retry = math.max(1, math.ceil(w * (p + c - limit + 1) / p) - e)\n"
    "end\n"
    "return {0, 0, w - e, retry, c, cur}\n";

#endif /* AURA_QUOTA_SCRIPT_H */
