/* matches.c: the parts of SIMHASH.QUERY/CHECK that need no event loop: the options
 * and the merge of the workers' matches (see matches.h). */
#include "matches.h"

#include <stdio.h>
#include <stdlib.h>

#include "parse.h"
#include "resp.h"
#include "rserver.h"

int coord_cmp_fp(const void *a, const void *b)
{
    const qmatch *x = a, *y = b;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

int coord_cmp_dist_fp(const void *a, const void *b)
{
    const qmatch *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

size_t coord_matches_merge(qmatch *m, size_t n, size_t limit)
{
    if (n > 1) {
        qsort(m, n, sizeof(*m), coord_cmp_fp);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (k > 0 && m[k - 1].fp == m[i].fp) {
                if (m[i].dist < m[k - 1].dist)
                    m[k - 1].dist = m[i].dist;
                /* the id lists of one fp are the same: keep any */
                if (m[k - 1].docs == NULL) {
                    m[k - 1].docs = m[i].docs;
                    m[k - 1].docslen = m[i].docslen;
                    m[k - 1].gone = m[i].gone;
                } else {
                    free(m[i].docs);
                }
                continue;
            }
            m[k++] = m[i];
        }
        n = k;
    }
    if (limit > 0 && n > limit) {
        qsort(m, n, sizeof(*m), coord_cmp_dist_fp);
        for (size_t i = limit; i < n; i++)
            free(m[i].docs);
        n = limit;
    }
    return n;
}

/* One option and its value (arguments i and i + 1). Returns 0, or -1 with err. */
static int coord_qopt_value(unsigned corpus_distance, const char *name, const char *val,
                            size_t vn, size_t i, coord_qopts *o, char *err, size_t errlen)
{
    char b[64];
    const char *why;
    uint64_t v;
    if (name[0] == 'F') {
        if (resp_word_is(val, vn, "html")) {
            o->html = 1;
        } else if (resp_word_is(val, vn, "html-all")) {
            o->html = 2;
        } else if (resp_word_is(val, vn, "text")) {
            o->html = 0;
        } else {
            snprintf(err, errlen, "invalid FORMAT '%s' (argument %zu): expected text, html or "
                     "html-all", rs_printable(b, sizeof(b), val, vn, 40), i + 1);
            return -1;
        }
    } else if (name[0] == 'D') {
        if (parse_uint_range(val, vn, 0, corpus_distance, &v, &why) != 0) {
            snprintf(err, errlen, "invalid DISTANCE '%s' (argument %zu): %s; the corpus "
                     "distance is %u", rs_printable(b, sizeof(b), val, vn, 40), i + 1, why,
                     corpus_distance);
            return -1;
        }
        o->d = (unsigned)v;
    } else {
        if (parse_uint_range(val, vn, 1, 1000000000, &v, &why) != 0) {
            snprintf(err, errlen, "invalid LIMIT '%s' (argument %zu): %s",
                     rs_printable(b, sizeof(b), val, vn, 40), i + 1, why);
            return -1;
        }
        o->limit = (size_t)v;
    }
    return 0;
}

int coord_qopts_parse(unsigned corpus_distance, coord_arg_fn arg, void *src, size_t argc,
                      size_t from, unsigned allow, coord_qopts *o, char *err, size_t errlen)
{
    static const char *const expect[8] = {
        "no option", "DISTANCE d", "LIMIT n", "DISTANCE d or LIMIT n", "FORMAT text|html|html-all",
        "DISTANCE d or FORMAT text|html|html-all", "LIMIT n or FORMAT text|html|html-all",
        "DISTANCE d, LIMIT n or FORMAT text|html|html-all",
    };
    static const struct { unsigned flag; const char *name; } names[] = {
        { COORD_OPT_DISTANCE, "DISTANCE" }, { COORD_OPT_LIMIT, "LIMIT" },
        { COORD_OPT_FORMAT, "FORMAT" },
    };
    o->d = corpus_distance;
    o->limit = 0;
    o->html = 0;
    for (size_t i = from; i < argc; i += 2) {
        size_t n, vn;
        const char *opt = arg(src, i, &n), *name = NULL;
        char b[64];
        for (size_t j = 0; j < sizeof(names) / sizeof(names[0]) && !name; j++)
            if ((allow & names[j].flag) && resp_word_is(opt, n, names[j].name))
                name = names[j].name;
        if (name == NULL) {
            snprintf(err, errlen, "unknown option '%s' (argument %zu); expected %s",
                     rs_printable(b, sizeof(b), opt, n, 40), i, expect[allow & 7]);
            return -1;
        }
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value (argument %zu)", name, i + 1);
            return -1;
        }
        const char *val = arg(src, i + 1, &vn);
        if (coord_qopt_value(corpus_distance, name, val, vn, i, o, err, errlen) != 0)
            return -1;
    }
    return 0;
}
