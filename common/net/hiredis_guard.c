/* hiredis_guard.c: refuse unsolicited replies on async connections; see hiredis_guard.h.
 *
 * The reader's object functions are wrapped: when a top-level reply starts while the
 * connection has no callback waiting (and is neither subscribed nor monitoring), the
 * wrapper returns NULL, which the reader reports as a parse error; hiredis then
 * disconnects instead of reaching its assert. Everything else goes to the original
 * functions unchanged. */
#include "hiredis_guard.h"
#include "log.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

static redisReplyObjectFunctions *guard_orig;

static int hg_unsolicited(const redisReadTask *task)
{
    const redisAsyncContext *ac = task->privdata;

    if (task->parent != NULL || ac == NULL)
        return 0;
    if (ac->replies.head != NULL || (ac->c.flags & (REDIS_SUBSCRIBED | REDIS_MONITORING)))
        return 0;
    log_warn_rl("%s:%d sent a reply nobody asked for: closing the connection "
                "(hiredis will report it as 'Out of memory')",
                ac->c.tcp.host ? ac->c.tcp.host : "?", ac->c.tcp.port);
    return 1;
}

static void *hg_string(const redisReadTask *task, char *str, size_t len)
{
    /* An error reply takes hiredis's own path (it disconnects with the error text). */
    if (task->type != REDIS_REPLY_ERROR && hg_unsolicited(task))
        return NULL;
    return guard_orig->createString(task, str, len);
}

static void *hg_array(const redisReadTask *task, int elements)
{
    return hg_unsolicited(task) ? NULL : guard_orig->createArray(task, elements);
}

static void *hg_integer(const redisReadTask *task, long long value)
{
    return hg_unsolicited(task) ? NULL : guard_orig->createInteger(task, value);
}

static void *hg_nil(const redisReadTask *task)
{
    return hg_unsolicited(task) ? NULL : guard_orig->createNil(task);
}

static void hg_free(void *obj)
{
    guard_orig->freeObject(obj);
}

static redisReplyObjectFunctions guard_fns = {
    hg_string, hg_array, hg_integer, hg_nil, hg_free,
};

void hiredis_guard(redisAsyncContext *ac)
{
    redisReader *r = ac->c.reader;

    if (r == NULL || r->fn == NULL || r->fn == &guard_fns)
        return;
    /* Every hiredis reader starts with the same default functions. */
    if (guard_orig == NULL)
        guard_orig = r->fn;
    if (r->fn != guard_orig)
        return;                 /* custom functions: leave them alone */
    r->fn = &guard_fns;
    r->privdata = ac;
}
