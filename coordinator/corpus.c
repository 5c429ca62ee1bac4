/* corpus.c: the coordinator's corpus checks of SHARD.HELLO (docs/protocol.md): one
 * coordinator serves one corpus, so every worker must report the same data layout
 * and corpus name. The layout is the configured one, or else the first worker's. */
#include <stdio.h>
#include <string.h>

#include "coord.h"

int coord_corpus_check(coord *co, const redisReply *r, char *why, size_t whylen)
{
    const redisReply *le = r->elements > 2 ? r->element[2] : NULL;
    long long layout = le && le->type == REDIS_REPLY_INTEGER ? le->integer : -1;
    unsigned want = co->cfg.layout ? co->cfg.layout : co->layout;
    if (layout < LAYOUT_VERSION_MIN || layout > LAYOUT_VERSION_MAX) {
        snprintf(why, whylen, "shard worker reports data layout %lld; this coordinator "
                 "understands layouts %d to %d", layout, LAYOUT_VERSION_MIN,
                 LAYOUT_VERSION_MAX);
        return -1;
    }
    if (want && (unsigned)layout != want) {
        snprintf(why, whylen, "layouts differ: shard worker serves a layout-%lld corpus, "
                 "this coordinator a layout-%u one (%s); a coordinator never mixes "
                 "layouts: give each corpus its own coordinator, or copy one corpus into "
                 "the other's layout with simhash migrate", layout, want,
                 co->cfg.layout ? "its option layout" : "its other workers");
        return -1;
    }
    /* element 9: the corpus name; workers from before names report none (unnamed) */
    const redisReply *ne = r->elements > 9 ? r->element[9] : NULL;
    const char *name = ne && ne->type == REDIS_REPLY_STRING ? ne->str : "";
    size_t nlen = ne && ne->type == REDIS_REPLY_STRING ? ne->len : 0;
    const char *mine = co->cfg.corpus ? co->cfg.corpus : "";
    if (nlen != strlen(mine) || memcmp(name, mine, nlen) != 0) {
        snprintf(why, whylen, "corpora differ: shard worker serves corpus '%.*s', this "
                 "coordinator corpus '%s' (set corpus to the same on both)",
                 (int)(nlen > 40 ? 40 : nlen), name, mine);
        return -1;
    }
    co->layout = (unsigned)layout;
    return 0;
}
