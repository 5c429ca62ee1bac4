/* corpus.c: the coordinator's corpus checks of SHARD.HELLO (docs/protocol.md): one
 * coordinator serves one corpus, so every worker must report the same data layout,
 * corpus name and fingerprint algorithm. The layout and the algorithm are the
 * configured ones, or else the first worker's. */
#include <stdio.h>
#include <string.h>

#include "coord.h"
#include "log.h"

/* Element 8 of SHARD.HELLO, the worker's fingerprint algorithm (its corpus's, in
 * simhash:meta): the coordinator's, or taken as the coordinator's when it has none
 * yet (option fingerprint-algorithm unset). Set once, on the event loop, before any
 * text is fingerprinted with it (coord_textfp refuses until then). */
static int coord_fp_check(coord *co, const redisReply *r, char *why, size_t whylen)
{
    const redisReply *fpa = r->elements >= 9 ? r->element[8] : NULL;
    int str = fpa && fpa->type == REDIS_REPLY_STRING;
    if (str && co->cfg.fp_spec[0] == '\0' && fpa->len < sizeof co->cfg.fp_spec) {
        fp_params p;
        char perr[160];
        if (fp_params_parse(fpa->str, &p, perr, sizeof perr) == 0) {
            co->cfg.fp = p;
            fp_params_format(&p, co->cfg.fp_spec, sizeof co->cfg.fp_spec);
            log_info("fingerprint algorithm %s: the corpus's, as its shard workers report",
                     co->cfg.fp_spec);
        }
    }
    char spec[8] = "";
    if (str && fpa->len < sizeof spec)
        memcpy(spec, fpa->str, fpa->len);
    unsigned removed = fp_params_removed(spec);
    if (removed) {
        snprintf(why, whylen, "shard worker reports a corpus of fingerprint algorithm v%u, "
                 "which was removed (v5 is its successor); the corpus must be rebuilt "
                 "(simhash export with an older build, fingerprint the documents again, "
                 "simhash load)", removed);
        return -1;
    }
    if (!str || fpa->len != strlen(co->cfg.fp_spec) ||
        memcmp(fpa->str, co->cfg.fp_spec, fpa->len) != 0) {
        snprintf(why, whylen,
                 "fingerprint algorithms differ: shard worker (and its corpus) %.*s, coordinator "
                 "%s (set fingerprint-algorithm to the same on both, or leave it unset on the "
                 "coordinator)",
                 str ? (int)(fpa->len > 20 ? 20 : fpa->len) : 7, str ? fpa->str : "unknown",
                 co->cfg.fp_spec[0] ? co->cfg.fp_spec : "(none it can read)");
        return -1;
    }
    return 0;
}

int coord_corpus_check(coord *co, const redisReply *r, char *why, size_t whylen)
{
    const redisReply *le = r->elements > 2 ? r->element[2] : NULL;
    long long layout = le && le->type == REDIS_REPLY_INTEGER ? le->integer : -1;
    if (layout != LAYOUT_VERSION) {
        snprintf(why, whylen, "shard worker reports data layout %lld; this coordinator "
                 "reads and writes data layout %d only (a corpus of another is copied "
                 "across with simhash export of the build that wrote it and simhash load)",
                 layout, LAYOUT_VERSION);
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
    if (coord_fp_check(co, r, why, whylen) != 0)
        return -1;
    co->layout = (unsigned)layout;
    return 0;
}
