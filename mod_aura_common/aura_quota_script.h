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
 * aura_quota.c).
 *
 * Two fixed windows, the current one (count c, elapsed e ms) and the one
 * before (count p); the previous one is weighted by the part of it that
 * still overlaps a window of w ms ending now:
 *     estimate = p * (w - e) / w + c
 * A request is admitted iff estimate + 1 <= limit, which is computed
 * multiplied by w ("left") so that the test is exact in integers; k more
 * fit iff estimate + k <= limit, so min(n, floor(left / w) + 1) are
 * granted and counted.
 * Returns {granted, remaining, reset_ms, retry_after_ms}; remaining is
 * what is left after the granted ones.  Lua numbers are truncated
 * towards zero on the way out: every result is floored or ceiled here,
 * explicitly.  Redis 7 replicates a script by its effects, so TIME
 * before a write is allowed. */
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
    "local c = tonumber(redis.call('GET', ckey) or '0')\n"
    "local p = tonumber(redis.call('GET', pkey) or '0')\n"
    "local left = (limit - c - 1) * w - p * (w - e)\n"
    "if left >= 0 then\n"
    "    local k = math.min(n, math.floor(left / w) + 1)\n"
    "    redis.call('INCRBY', ckey, k)\n"
    "    redis.call('PEXPIRE', ckey, 2 * w)\n"
    "    return {k, math.floor(left / w) - (k - 1), w - e, 0}\n"
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
    "return {0, 0, w - e, retry}\n";

#endif /* AURA_QUOTA_SCRIPT_H */
