/* client_reply.c: strict decoding of the coordinator's replies into shc_result, and
 * the error bookkeeping of a handle. Unexpected shapes become SHC_ERR_PROTOCOL. */
#include "client_int.h"

#include "parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Error bookkeeping ---- */

shc_status shci_set_error(shc_client *c, shc_status st, const char *fmt, ...)
{
    va_list ap;

    c->last = st;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
    return st;
}

shc_status shci_set_ok(shc_client *c)
{
    c->last = SHC_OK;
    c->errstr[0] = '\0';
    return SHC_OK;
}

/* Name of a reply type for messages. */
static const char *shci_reply_type_name(int type)
{
    switch (type) {
    case REDIS_REPLY_STRING:  return "bulk string";
    case REDIS_REPLY_ARRAY:   return "array";
    case REDIS_REPLY_INTEGER: return "integer";
    case REDIS_REPLY_NIL:     return "nil";
    case REDIS_REPLY_STATUS:  return "status";
    case REDIS_REPLY_ERROR:   return "error";
    default:                  return "unknown reply";
    }
}

shc_status shci_reply_error(shc_client *c, const redisReply *r, const char *prefix)
{
    const char *msg = r->str ? r->str : "";
    int len = r->len > SHC_ERRSTR_MAX ? SHC_ERRSTR_MAX : (int)r->len;
    shc_status st = SHC_ERR_SERVER;

    if (r->len >= 7 && strncmp(msg, "TIMEOUT", 7) == 0)
        st = SHC_ERR_TIMEOUT;
    return shci_set_error(c, st, "%s%.*s", prefix, len, msg);
}

/* ---- Reply decoding ---- */

shc_status shci_parse_fp_reply(shc_client *c, const redisReply *r, const char *what,
                              uint64_t *fp)
{
    const char *why = NULL;

    if (r->type != REDIS_REPLY_STRING)
        return shci_set_error(c, SHC_ERR_PROTOCOL, "%s: expected a bulk string, got %s",
                             what, shci_reply_type_name(r->type));
    if (parse_u64(r->str, r->len, fp, &why) != 0)
        return shci_set_error(c, SHC_ERR_PROTOCOL, "%s: bad fingerprint \"%.*s\": %s", what,
                             r->len > 40 ? 40 : (int)r->len, r->str, why);
    return SHC_OK;
}

/* Decode one [fp, distance, [docid ...]] element (a scan's [fp, [docid ...]] when
 * scan is set) into m. Returns a status. */
static shc_status shci_parse_match(shc_client *c, const redisReply *e, size_t i, shc_match *m,
                                   int scan)
{
    char what[64];
    size_t want = scan ? 2 : 3;

    snprintf(what, sizeof(what), "match %zu", i);
    if (e->type != REDIS_REPLY_ARRAY || e->elements != want)
        return shci_set_error(c, SHC_ERR_PROTOCOL,
                             "%s: expected an array of %zu (fp, %sdocids), got %s of %zu",
                             what, want, scan ? "" : "distance, ", shci_reply_type_name(e->type),
                             e->type == REDIS_REPLY_ARRAY ? e->elements : (size_t)0);
    if (shci_parse_fp_reply(c, e->element[0], what, &m->fp) != SHC_OK)
        return SHC_ERR_PROTOCOL;
    if (!scan && (e->element[1]->type != REDIS_REPLY_INTEGER || e->element[1]->integer < 0 ||
                  e->element[1]->integer > 64))
        return shci_set_error(c, SHC_ERR_PROTOCOL,
                             "%s: expected a distance 0..64, got %s", what,
                             shci_reply_type_name(e->element[1]->type));
    m->distance = scan ? 0 : (unsigned)e->element[1]->integer;

    const redisReply *d = e->element[want - 1];
    if (d->type != REDIS_REPLY_ARRAY)
        return shci_set_error(c, SHC_ERR_PROTOCOL, "%s: expected an array of docids, got %s",
                             what, shci_reply_type_name(d->type));
    if (d->elements == 0)
        return SHC_OK;
    m->docids = calloc(d->elements, sizeof(*m->docids));
    m->docid_lens = calloc(d->elements, sizeof(*m->docid_lens));
    if (!m->docids || !m->docid_lens)
        return shci_set_error(c, SHC_ERR_NOMEM, "out of memory decoding %zu docids",
                             d->elements);
    for (size_t j = 0; j < d->elements; j++) {
        const redisReply *s = d->element[j];
        if (s->type != REDIS_REPLY_STRING)
            return shci_set_error(c, SHC_ERR_PROTOCOL, "%s: docid %zu is a %s, not a string",
                                 what, j, shci_reply_type_name(s->type));
        m->docids[j] = malloc(s->len + 1);
        if (!m->docids[j])
            return shci_set_error(c, SHC_ERR_NOMEM, "out of memory decoding docids");
        memcpy(m->docids[j], s->str, s->len);
        m->docids[j][s->len] = '\0';
        m->docid_lens[j] = s->len;
        m->ndocids = j + 1;
    }
    return SHC_OK;
}

shc_status shci_parse_result(shc_client *c, const redisReply *r, shc_result **out)
{
    return shci_parse_matches(c, r, 0, out);
}

shc_status shci_parse_matches(shc_client *c, const redisReply *r, int scan, shc_result **out)
{
    shc_result *res;
    shc_status st;

    *out = NULL;
    if (r->type != REDIS_REPLY_ARRAY)
        return shci_set_error(c, SHC_ERR_PROTOCOL, "expected an array of matches, got %s",
                             shci_reply_type_name(r->type));
    res = calloc(1, sizeof(*res));
    if (!res)
        return shci_set_error(c, SHC_ERR_NOMEM, "out of memory");
    if (r->elements > 0) {
        res->matches = calloc(r->elements, sizeof(*res->matches));
        if (!res->matches) {
            free(res);
            return shci_set_error(c, SHC_ERR_NOMEM, "out of memory decoding %zu matches",
                                 r->elements);
        }
    }
    for (size_t i = 0; i < r->elements; i++) {
        res->nmatches = i + 1;
        st = shci_parse_match(c, r->element[i], i, &res->matches[i], scan);
        if (st != SHC_OK) {
            shc_result_free(res);
            return st;
        }
    }
    *out = res;
    return SHC_OK;
}

void shc_result_free(shc_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nmatches; i++) {
        shc_match *m = &r->matches[i];
        if (m->docids)
            for (size_t j = 0; j < m->ndocids; j++)
                free(m->docids[j]);
        free(m->docids);
        free(m->docid_lens);
    }
    free(r->matches);
    free(r);
}

const char *shc_status_name(shc_status st)
{
    switch (st) {
    case SHC_OK:           return "SHC_OK";
    case SHC_ERR_IO:       return "SHC_ERR_IO";
    case SHC_ERR_PROTOCOL: return "SHC_ERR_PROTOCOL";
    case SHC_ERR_SERVER:   return "SHC_ERR_SERVER";
    case SHC_ERR_TIMEOUT:  return "SHC_ERR_TIMEOUT";
    case SHC_ERR_ARG:      return "SHC_ERR_ARG";
    case SHC_ERR_NOMEM:    return "SHC_ERR_NOMEM";
    }
    return "SHC_ERR_UNKNOWN";
}
