/* rs_redis.c: the commands Redis clients and tools send on their own, answered as
 * Redis 7 answers them so that their default options work against simhash-coordinator
 * and simhash-shard: HELLO (protocol 2 or 3: every reply of this server is the same in
 * both but nulls and maps, which resp.c writes per connection), CLIENT ..., SELECT 0,
 * ECHO, INFO [section ...],
 * COMMAND [COUNT|LIST|INFO|DOCS], CONFIG GET, and MULTI/EXEC & co. refused with an
 * error that names the alternative. The per-command counters, latency histograms
 * and SLOWLOG are in rs_stats.c; the built-in command table is at the end.
 *
 * Hand-written rather than borrowed: no library implements the server side of these
 * commands; the formats follow Redis's documentation and its INFO / COMMAND output. */
#include "rs_int.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "parse.h"
#include "rasync.h"

/* The Redis version whose client-facing behaviour (handshake, INFO, COMMAND) these
 * commands follow; clients and exporters gate features on it. */
#define RS_REDIS_COMPAT_VERSION "7.0.0"

/* ---- Helpers ---- */

int rs_arg_is(rs_req *r, size_t i, const char *word)
{
    size_t n;
    const char *a = rs_req_arg(r, i, &n);
    return a && resp_word_is(a, n, word);
}

/* Lower-case copy of a command name (at most cap - 1 bytes). */
const char *rs_lower(const char *name, char *buf, size_t cap)
{
    size_t i;
    for (i = 0; name[i] && i + 1 < cap; i++)
        buf[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
    buf[i] = '\0';
    return buf;
}

/* Every command: the program's, then the built-in ones the program does not replace.
 * Calls fn(cmd, arg) for each; returns the count. */
size_t rs_each_command(const rserver *s, void (*fn)(const rs_command *, void *), void *arg)
{
    size_t n = 0;
    for (size_t i = 0; i < s->opt.ncommands; i++, n++)
        if (fn)
            fn(&s->opt.commands[i], arg);
    for (size_t i = 0; i < rs_nbuiltin; i++) {
        int shadowed = 0;
        for (size_t j = 0; j < s->opt.ncommands && !shadowed; j++)
            shadowed = strcasecmp(s->opt.commands[j].name, rs_builtin[i].name) == 0;
        if (shadowed)
            continue;
        if (fn)
            fn(&rs_builtin[i], arg);
        n++;
    }
    return n;
}

/* 1 when the built-in command cmd is one of this program's own. */
static int rs_is_program_command(const rserver *s, const rs_command *cmd)
{
    return s->opt.commands && cmd >= s->opt.commands && cmd < s->opt.commands + s->opt.ncommands;
}

/* ---- HELLO ---- */

/* The properties HELLO answers with (a map: RESP2 writes it as a flat array). */
static void rs_hello_reply(rs_req *r)
{
    resp_buf *b = rs_req_out(r);
    resp_add_map(b, 8);
    resp_add_bulk_str(b, "server");
    resp_add_bulk_str(b, "redis");
    resp_add_bulk_str(b, "version");
    resp_add_bulk_str(b, RS_REDIS_COMPAT_VERSION);
    resp_add_bulk_str(b, "proto");
    resp_add_int(b, r->c->resp3 ? 3 : 2);
    resp_add_bulk_str(b, "id");
    resp_add_int(b, (long long)r->c->id);
    resp_add_bulk_str(b, "mode");
    resp_add_bulk_str(b, "standalone");
    resp_add_bulk_str(b, "role");
    resp_add_bulk_str(b, "master");
    resp_add_bulk_str(b, "modules");
    resp_add_array(b, 0);
    resp_add_bulk_str(b, "simhash_server");
    resp_add_bulk_str(b, r->c->s ? r->c->s->opt.name : "simhash");
}

/* 1 when name is acceptable to CLIENT SETNAME (Redis: no spaces, newlines or
 * other characters outside '!'..'~'). */
static int rs_name_ok(const char *name, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (name[i] < '!' || name[i] > '~')
            return 0;
    return 1;
}

static int rs_set_str(char **dst, const char *src, size_t n)
{
    char *v = NULL;
    if (n > 0) {
        v = malloc(n + 1);
        if (v == NULL)
            return -1;
        memcpy(v, src, n);
        v[n] = '\0';
    }
    free(*dst);
    *dst = v;
    return 0;
}

void rs_cmd_hello(rs_req *r)
{
    rs_client *c = r->c;
    size_t argc = rs_req_argc(r), n;
    const char *user = NULL, *pass = NULL, *name = NULL;
    size_t ulen = 0, plen = 0, nlen = 0;
    int proto = 0;              /* 0: keep the connection's protocol */

    if (argc >= 2) {
        const char *v = rs_req_arg(r, 1, &n);
        char buf[24];
        long long ver = 0;
        char *end = NULL;
        if (n > 0 && n < sizeof(buf)) {
            memcpy(buf, v, n);
            buf[n] = '\0';
            ver = strtoll(buf, &end, 10);
        }
        if (n == 0 || n >= sizeof(buf) || end == NULL || *end != '\0' || ver < 1) {
            rs_req_fail(r, RS_ERR, "Protocol version is not an integer or out of range");
            return;
        }
        if (ver != 2 && ver != 3) {
            resp_buf_clear(rs_req_out(r));
            resp_add_error(rs_req_out(r), "NOPROTO", "unsupported protocol version");
            rs_req_finish(r);
            return;
        }
        proto = (int)ver;
    }
    for (size_t i = 2; i < argc; i++) {
        if (rs_arg_is(r, i, "AUTH") && i + 2 < argc) {
            user = rs_req_arg(r, i + 1, &ulen);
            pass = rs_req_arg(r, i + 2, &plen);
            i += 2;
        } else if (rs_arg_is(r, i, "SETNAME") && i + 1 < argc) {
            name = rs_req_arg(r, i + 1, &nlen);
            i += 1;
        } else {
            char shown[80];
            const char *a = rs_req_arg(r, i, &n);
            rs_req_fail(r, RS_ERR, "Syntax error in HELLO option '%s'",
                        rs_printable(shown, sizeof(shown), a, n, 64));
            return;
        }
    }
    if (name && !rs_name_ok(name, nlen)) {
        rs_req_fail(r, RS_ERR, "Client names cannot contain spaces, newlines or special "
                    "characters.");
        return;
    }
    if (pass) {
        if (!rs_auth_check(r, user, ulen, pass, plen))
            return;
    } else if (c->s && rs_auth_on(c->s) && !c->authed) {
        rs_req_fail(r, RS_NOAUTH, "HELLO must be called with the client already authenticated, "
                    "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                    "authenticate the client and select the RESP protocol version at the "
                    "same time");
        return;
    }
    if (name && rs_set_str(&c->name, name, nlen) != 0) {
        rs_req_fail(r, RS_OOM, "out of memory");
        return;
    }
    if (proto) {
        c->resp3 = proto == 3;
        rs_req_out(r)->resp3 = c->resp3;
    }
    rs_hello_reply(r);
    rs_req_finish(r);
}

/* ---- CLIENT ---- */

/* One line of CLIENT LIST / CLIENT INFO for c (Redis 7's fields that apply). */
static void rs_client_line(resp_buf *b, const rs_client *c, uint64_t now_ms)
{
    char cmd[64];
    size_t qbuf = 0, obl = 0;
    int fd = -1;
    if (c->bev) {
        fd = (int)bufferevent_getfd(c->bev);
        qbuf = evbuffer_get_length(bufferevent_get_input(c->bev));
        obl = evbuffer_get_length(bufferevent_get_output(c->bev));
    }
    resp_buf_printf(b,
                    "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu flags=N db=0 "
                    "sub=0 psub=0 ssub=0 multi=-1 qbuf=%zu qbuf-free=0 argv-mem=%zu "
                    "multi-mem=0 obl=0 oll=%u omem=%zu events=r cmd=%s user=%s redir=-1 "
                    "resp=%d lib-name=%s lib-ver=%s\n",
                    (unsigned long long)c->id, c->addr, c->laddr, fd, c->name ? c->name : "",
                    (unsigned long long)((now_ms - c->connected_ms) / 1000),
                    (unsigned long long)((now_ms - c->active_ms) / 1000), qbuf, c->pending_bytes,
                    c->npending, obl,
                    c->last_cmd ? rs_lower(c->last_cmd, cmd, sizeof(cmd)) : "NULL",
                    c->user_name, c->resp3 ? 3 : 2, c->lib_name ? c->lib_name : "",
                    c->lib_ver ? c->lib_ver : "");
}

static const char *const rs_client_help[] = {
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ID", "    Return the ID of the current connection.",
    "SETNAME <name>", "    Assign the name <name> to the current connection.",
    "GETNAME", "    Return the name of the current connection.",
    "SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
    "INFO", "    Return information about the current client connection.",
    "LIST [TYPE NORMAL] [ID id ...]", "    Return information about client connections.",
    "NO-EVICT (ON|OFF)", "    Accepted (no eviction happens here).",
    "NO-TOUCH (ON|OFF)", "    Accepted (no key access times are kept here).",
    "REPLY ON", "    Accepted (replies are always sent).",
    "HELP", "    Print this help.",
};

void rs_cmd_client(rs_req *r)
{
    rs_client *c = r->c;
    resp_buf *b = rs_req_out(r);
    size_t argc = rs_req_argc(r), n;
    const char *sub = rs_req_arg(r, 1, &n);
    char shown[80];

    if (rs_arg_is(r, 1, "ID") && argc == 2) {
        resp_add_int(b, (long long)c->id);
    } else if (rs_arg_is(r, 1, "SETNAME") && argc == 3) {
        size_t nl;
        const char *name = rs_req_arg(r, 2, &nl);
        if (!rs_name_ok(name, nl)) {
            rs_req_fail(r, RS_ERR, "Client names cannot contain spaces, newlines or special "
                        "characters.");
            return;
        }
        if (rs_set_str(&c->name, name, nl) != 0) {
            rs_req_fail(r, RS_OOM, "out of memory");
            return;
        }
        resp_add_simple(b, "OK");
    } else if (rs_arg_is(r, 1, "GETNAME") && argc == 2) {
        if (c->name)
            resp_add_bulk_str(b, c->name);
        else
            resp_add_null(b);
    } else if (rs_arg_is(r, 1, "SETINFO") && argc == 4) {
        size_t vl;
        const char *v = rs_req_arg(r, 3, &vl);
        char **dst = rs_arg_is(r, 2, "LIB-NAME") ? &c->lib_name
                     : rs_arg_is(r, 2, "LIB-VER") ? &c->lib_ver : NULL;
        if (dst == NULL) {
            const char *a = rs_req_arg(r, 2, &n);
            rs_req_fail(r, RS_ERR, "Unrecognized option '%s'",
                        rs_printable(shown, sizeof(shown), a, n, 64));
            return;
        }
        if (!rs_name_ok(v, vl) || vl > 128) {
            rs_req_fail(r, RS_ERR, "%s cannot contain spaces, newlines or special characters.",
                        dst == &c->lib_name ? "lib-name" : "lib-ver");
            return;
        }
        if (rs_set_str(dst, v, vl) != 0) {
            rs_req_fail(r, RS_OOM, "out of memory");
            return;
        }
        resp_add_simple(b, "OK");
    } else if (rs_arg_is(r, 1, "INFO") && argc == 2) {
        resp_buf line;
        resp_buf_init(&line, 0);
        rs_client_line(&line, c, ra_now_ms());
        resp_add_bulk(b, line.data, line.len);
        resp_buf_free(&line);
    } else if (rs_arg_is(r, 1, "LIST")) {
        /* TYPE normal and ID id ... filters; every client here is "normal" */
        uint64_t ids[64];
        size_t nids = 0;
        for (size_t i = 2; i < argc; i++) {
            if (rs_arg_is(r, i, "TYPE") && i + 1 < argc) {
                if (!rs_arg_is(r, i + 1, "NORMAL")) {
                    const char *a = rs_req_arg(r, i + 1, &n);
                    rs_req_fail(r, RS_ERR, "Unknown client type '%s'",
                                rs_printable(shown, sizeof(shown), a, n, 64));
                    return;
                }
                i++;
            } else if (rs_arg_is(r, i, "ID") && i + 1 < argc) {
                for (i = i + 1; i < argc; i++) {
                    const char *a = rs_req_arg(r, i, &n), *why;
                    uint64_t v;
                    if (nids == sizeof(ids) / sizeof(ids[0]) || parse_u64(a, n, &v, &why) != 0) {
                        rs_req_fail(r, RS_ERR, "Invalid client ID");
                        return;
                    }
                    ids[nids++] = v;
                }
            } else {
                rs_req_fail(r, RS_ERR, "syntax error");
                return;
            }
        }
        resp_buf list;
        resp_buf_init(&list, 0);
        uint64_t now = ra_now_ms();
        for (const rs_client *o = c->s ? c->s->clients : c; o; o = c->s ? o->next : NULL) {
            int keep = nids == 0;
            for (size_t k = 0; k < nids && !keep; k++)
                keep = ids[k] == o->id;
            if (keep)
                rs_client_line(&list, o, now);
        }
        resp_add_bulk(b, list.data, list.len);
        resp_buf_free(&list);
    } else if ((rs_arg_is(r, 1, "NO-EVICT") || rs_arg_is(r, 1, "NO-TOUCH")) && argc == 3 &&
               (rs_arg_is(r, 2, "ON") || rs_arg_is(r, 2, "OFF"))) {
        resp_add_simple(b, "OK");
    } else if (rs_arg_is(r, 1, "REPLY") && argc == 3 && rs_arg_is(r, 2, "ON")) {
        resp_add_simple(b, "OK");
    } else if (rs_arg_is(r, 1, "HELP") && argc == 2) {
        size_t k = sizeof(rs_client_help) / sizeof(rs_client_help[0]);
        resp_add_array(b, k);
        for (size_t i = 0; i < k; i++)
            resp_add_simple(b, rs_client_help[i]);
    } else {
        rs_req_fail(r, RS_ERR, "unknown subcommand or wrong number of arguments for '%s'. "
                    "Try CLIENT HELP.", rs_printable(shown, sizeof(shown), sub, n, 64));
        return;
    }
    rs_req_finish(r);
}

/* ---- SELECT, ECHO, CONFIG, transactions ---- */

void rs_cmd_select(rs_req *r)
{
    if (!rs_arg_is(r, 1, "0")) {
        rs_req_fail(r, RS_ERR, "DB index is out of range (this server has database 0 only)");
        return;
    }
    resp_add_simple(rs_req_out(r), "OK");
    rs_req_finish(r);
}

void rs_cmd_echo(rs_req *r)
{
    size_t n;
    const char *m = rs_req_arg(r, 1, &n);
    resp_add_bulk(rs_req_out(r), m, n);
    rs_req_finish(r);
}

/* CONFIG GET pattern ...: the Redis settings that describe this server (it keeps no
 * data of its own: no snapshots, no AOF, one database), so tools that read them at
 * start (redis-benchmark reads save and appendonly) see the truth. */
void rs_cmd_config(rs_req *r)
{
    rserver *s = r->c->s;
    if (s && rs_arg_is(r, 1, "GET") && rs_req_argc(r) >= 3) {
        char maxclients[16], timeout[16], port[16];
        snprintf(maxclients, sizeof(maxclients), "%u", s->opt.limits.max_clients);
        snprintf(timeout, sizeof(timeout), "%u", s->opt.limits.idle_timeout_s);
        snprintf(port, sizeof(port), "%u", s->port);
        const char *const kv[][2] = {
            { "save", "" },         { "appendonly", "no" },   { "databases", "1" },
            { "maxclients", maxclients }, { "timeout", timeout }, { "port", port },
            { "bind", s->bind ? s->bind : "" }, { "maxmemory", "0" },
        };
        const size_t nkv = sizeof(kv) / sizeof(kv[0]);
        int hit[sizeof(kv) / sizeof(kv[0])] = { 0 };
        size_t nhit = 0;
        for (size_t i = 2; i < rs_req_argc(r); i++) {
            const char *pat = rs_req_arg(r, i, NULL);
            for (size_t k = 0; k < nkv; k++)
                if (!hit[k] && fnmatch(pat, kv[k][0], FNM_CASEFOLD) == 0) {
                    hit[k] = 1;
                    nhit++;
                }
        }
        resp_add_map(rs_req_out(r), nhit);
        for (size_t k = 0; k < nkv; k++)
            if (hit[k]) {
                resp_add_bulk_str(rs_req_out(r), kv[k][0]);
                resp_add_bulk_str(rs_req_out(r), kv[k][1]);
            }
        rs_req_finish(r);
        return;
    }
    rs_req_fail(r, RS_ERR, "CONFIG: only CONFIG GET is answered; %s is configured in its "
                "config file and command line (--help)", s ? s->opt.name : "this server");
}

/* MULTI is refused, and the commands after it up to EXEC or DISCARD are refused too
 * (rserver.c checks in_multi), so a client that meant them as a transaction never
 * sees half of it applied: EXEC answers -EXECABORT as Redis does for a transaction
 * with a refused command, DISCARD ends it. */
void rs_cmd_notx(rs_req *r)
{
    rs_client *c = r->c;
    const char *who = c->s ? c->s->opt.name : "this server";
    if (rs_arg_is(r, 0, "MULTI"))
        c->in_multi = 1;
    if (c->in_multi && rs_arg_is(r, 0, "EXEC")) {
        c->in_multi = 0;
        resp_buf_clear(rs_req_out(r));
        resp_add_error(rs_req_out(r), "EXECABORT", "Transaction discarded: transactions are "
                       "not supported by %s; send the commands without MULTI, as a plain pipeline "
                       "(ioredis: pipeline(); redis-py: pipeline(transaction=False))", who);
        rs_req_finish(r);
        return;
    }
    if (c->in_multi && rs_arg_is(r, 0, "DISCARD")) {
        c->in_multi = 0;
        resp_add_simple(rs_req_out(r), "OK");
        rs_req_finish(r);
        return;
    }
    rs_req_fail(r, RS_ERR, "transactions (MULTI/EXEC/WATCH) are not supported by %s: send "
                "the commands without MULTI, as a plain pipeline (redis-py: "
                "pipeline(transaction=False); ioredis: pipeline(), not multi(); node-redis: "
                "multi().execAsPipeline())", who);
}

/* ---- COMMAND ---- */

/* COMMAND INFO entry of cmd (Redis 7: name, arity, flags, first key, last key, step,
 * ACL categories, tips, key specs, subcommands). */
static void rs_command_info(const rs_command *cmd, void *arg)
{
    resp_buf *b = arg;
    char lower[64];
    unsigned nflags = 0;
    const char *flags[4];
    if (cmd->flags & (RS_CMD_WRITE | RS_CMD_ORDERED | RS_CMD_CHANGES))
        flags[nflags++] = "write";
    if (cmd->flags & (RS_CMD_READONLY))
        flags[nflags++] = "readonly";
    if (cmd->flags & RS_CMD_NOAUTH)
        flags[nflags++] = "no_auth";
    if (cmd->flags & (RS_CMD_CONN | RS_CMD_SERVER))
        flags[nflags++] = "loading";
    resp_add_array(b, 10);
    resp_add_bulk_str(b, rs_lower(cmd->name, lower, sizeof(lower)));
    resp_add_int(b, cmd->arity);
    resp_add_array(b, nflags);
    for (unsigned i = 0; i < nflags; i++)
        resp_add_simple(b, flags[i]);
    resp_add_int(b, 0);
    resp_add_int(b, 0);
    resp_add_int(b, 0);
    resp_add_array(b, 1);
    resp_add_simple(b, (cmd->flags & RS_CMD_CONN) ? "@connection"
                       : (cmd->flags & (RS_CMD_WRITE | RS_CMD_ORDERED | RS_CMD_CHANGES)) ? "@write"
                                                                                   : "@read");
    resp_add_array(b, 0);
    resp_add_array(b, 0);
    resp_add_array(b, 0);
}

static size_t rs_args_count(const rs_arg *a)
{
    size_t n = 0;
    while (a && a[n].name)
        n++;
    return n;
}

/* The COMMAND DOCS map of one argument (RESP2: flat name, value pairs). */
static void rs_doc_arg(resp_buf *b, const rs_arg *a)
{
    size_t nsub = rs_args_count(a->args);
    unsigned nflags = ((a->flags & RS_ARG_OPTIONAL) != 0) + ((a->flags & RS_ARG_MULTIPLE) != 0);
    size_t fields = 2 + (a->token != NULL) + (nflags > 0) + (nsub > 0);
    resp_add_map(b, fields);
    resp_add_bulk_str(b, "name");
    resp_add_bulk_str(b, a->name);
    resp_add_bulk_str(b, "type");
    resp_add_bulk_str(b, a->type);
    if (a->token) {
        resp_add_bulk_str(b, "token");
        resp_add_bulk_str(b, a->token);
    }
    if (nflags > 0) {
        resp_add_bulk_str(b, "flags");
        resp_add_array(b, nflags);
        if (a->flags & RS_ARG_OPTIONAL)
            resp_add_simple(b, "optional");
        if (a->flags & RS_ARG_MULTIPLE)
            resp_add_simple(b, "multiple");
    }
    if (nsub > 0) {
        resp_add_bulk_str(b, "arguments");
        resp_add_array(b, nsub);
        for (size_t i = 0; i < nsub; i++)
            rs_doc_arg(b, &a->args[i]);
    }
}

typedef struct rs_docs_ctx {
    const rserver *s;
    resp_buf *b;
} rs_docs_ctx;

/* COMMAND DOCS: name, then the map of summary, since, group, complexity, arguments. */
static void rs_command_docs(const rs_command *cmd, void *arg)
{
    rs_docs_ctx *d = arg;
    char lower[64];
    const char *group = (cmd->flags & RS_CMD_CONN)     ? "connection"
                        : (cmd->flags & RS_CMD_SERVER) ? "server"
                        : d->s->opt.group              ? d->s->opt.group : "generic";
    size_t nargs = rs_args_count(cmd->args);
    resp_add_bulk_str(d->b, rs_lower(cmd->name, lower, sizeof(lower)));
    resp_add_map(d->b, nargs > 0 ? 5 : 4);
    resp_add_bulk_str(d->b, "summary");
    resp_add_bulk_str(d->b, cmd->summary ? cmd->summary : "");
    resp_add_bulk_str(d->b, "since");
    resp_add_bulk_str(d->b, rs_is_program_command(d->s, cmd) ? SIMHASH_VERSION : "1.0.0");
    resp_add_bulk_str(d->b, "group");
    resp_add_bulk_str(d->b, group);
    resp_add_bulk_str(d->b, "complexity");
    resp_add_bulk_str(d->b, "");
    if (nargs > 0) {
        resp_add_bulk_str(d->b, "arguments");
        resp_add_array(d->b, nargs);
        for (size_t i = 0; i < nargs; i++)
            rs_doc_arg(d->b, &cmd->args[i]);
    }
}

static void rs_command_name(const rs_command *cmd, void *arg)
{
    char lower[64];
    resp_add_bulk_str(arg, rs_lower(cmd->name, lower, sizeof(lower)));
}

void rs_cmd_command(rs_req *r)
{
    rserver *s = r->c->s;
    resp_buf *b = rs_req_out(r);
    size_t argc = rs_req_argc(r), n;

    if (s == NULL) {
        rs_req_fail(r, RS_ERR, "server is shutting down");
        return;
    }
    if (argc == 1) {
        resp_add_array(b, rs_each_command(s, NULL, NULL));
        rs_each_command(s, rs_command_info, b);
    } else if (rs_arg_is(r, 1, "COUNT") && argc == 2) {
        resp_add_int(b, (long long)rs_each_command(s, NULL, NULL));
    } else if (rs_arg_is(r, 1, "LIST") && argc == 2) {
        resp_add_array(b, rs_each_command(s, NULL, NULL));
        rs_each_command(s, rs_command_name, b);
    } else if (rs_arg_is(r, 1, "INFO")) {
        if (argc == 2) {
            resp_add_array(b, rs_each_command(s, NULL, NULL));
            rs_each_command(s, rs_command_info, b);
        } else {
            resp_add_array(b, argc - 2);
            for (size_t i = 2; i < argc; i++) {
                const char *name = rs_req_arg(r, i, &n);
                const rs_command *cmd = rs_find_command(s, name, n);
                if (cmd)
                    rs_command_info(cmd, b);
                else
                    resp_add_null_array(b);
            }
        }
    } else if (rs_arg_is(r, 1, "DOCS")) {
        rs_docs_ctx d = { s, b };
        if (argc == 2) {
            resp_add_map(b, rs_each_command(s, NULL, NULL));
            rs_each_command(s, rs_command_docs, &d);
        } else {
            size_t found = 0;
            for (size_t i = 2; i < argc; i++) {
                const char *name = rs_req_arg(r, i, &n);
                found += rs_find_command(s, name, n) != NULL;
            }
            resp_add_map(b, found);
            for (size_t i = 2; i < argc; i++) {
                const char *name = rs_req_arg(r, i, &n);
                const rs_command *cmd = rs_find_command(s, name, n);
                if (cmd)
                    rs_command_docs(cmd, &d);
            }
        }
    } else if (rs_arg_is(r, 1, "GETKEYS") || rs_arg_is(r, 1, "GETKEYSANDFLAGS")) {
        rs_req_fail(r, RS_ERR, "The command has no key arguments");
        return;
    } else {
        char shown[80];
        const char *sub = rs_req_arg(r, 1, &n);
        rs_req_fail(r, RS_ERR, "unknown subcommand '%s'. Try COMMAND COUNT, LIST, INFO or DOCS.",
                    rs_printable(shown, sizeof(shown), sub, n, 64));
        return;
    }
    rs_req_finish(r);
}

/* ---- INFO ---- */

#define RS_INFO_MAX_SECTIONS 16

typedef struct rs_info_sel {
    int all;                /* "all" or "everything" */
    int dflt;               /* no argument, or "default" */
    size_t n;
    char names[RS_INFO_MAX_SECTIONS][32];   /* lower-case section names asked for */
} rs_info_sel;

/* 1 when the section (name in any case) is to be written; in_default: part of the
 * default set. */
static int rs_info_want(const rs_info_sel *sel, const char *name, size_t len, int in_default)
{
    if (sel->all || (sel->dflt && in_default))
        return 1;
    for (size_t i = 0; i < sel->n; i++)
        if (resp_word_is(name, len, sel->names[i]))
            return 1;
    return 0;
}

/* Starts a section: a blank line between sections, as Redis writes them. */
static void rs_info_head(resp_buf *b, const char *title)
{
    resp_buf_printf(b, "%s# %s\r\n", b->len ? "\r\n" : "", title);
}

/* Bytes resident in memory of this process (from /proc), or 0. */
static unsigned long long rs_rss_bytes(void)
{
    unsigned long long pages_total = 0, pages_rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%llu %llu", &pages_total, &pages_rss) != 2)
        pages_rss = 0;
    fclose(f);
    long ps = sysconf(_SC_PAGESIZE);
    return pages_rss * (unsigned long long)(ps > 0 ? ps : 4096);
}

static void rs_info_server(const rserver *s, resp_buf *b)
{
    struct utsname u;
    uint64_t up_s = (ra_now_ms() - s->start_ms) / 1000;
    if (uname(&u) != 0)
        snprintf(u.sysname, sizeof(u.sysname), "?"), u.release[0] = u.machine[0] = '\0';
    rs_info_head(b, "Server");
    resp_buf_printf(b,
                    "redis_version:%s\r\nsimhash_version:%s\r\nserver_name:%s\r\n"
                    "redis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%zu\r\n"
                    "multiplexing_api:%s\r\nprocess_id:%ld\r\ntcp_port:%u\r\n"
                    "server_time_usec:%llu\r\nuptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n",
                    RS_REDIS_COMPAT_VERSION, SIMHASH_VERSION, s->opt.name, u.sysname, u.release,
                    u.machine, sizeof(void *) * 8, event_base_get_method(s->base), (long)getpid(),
                    s->port, rs_wall_us(), (unsigned long long)up_s,
                    (unsigned long long)(up_s / 86400));
}

static void rs_info_clients_section(const rserver *s, resp_buf *b)
{
    rs_info_head(b, "Clients");
    resp_buf_printf(b, "maxclients:%u\r\nblocked_clients:0\r\ntracking_clients:0\r\n",
                    s->opt.limits.max_clients);
    rs_info_clients(s, b);
}

static void rs_info_memory(resp_buf *b)
{
    unsigned long long rss = rs_rss_bytes();
    rs_info_head(b, "Memory");
    resp_buf_printf(b, "used_memory:%llu\r\nused_memory_human:%.2fM\r\nused_memory_rss:%llu\r\n"
                    "maxmemory:0\r\n", rss, (double)rss / (1024.0 * 1024.0), rss);
}

static void rs_info_persistence(resp_buf *b)
{
    rs_info_head(b, "Persistence");
    resp_buf_printf(b, "loading:0\r\nasync_loading:0\r\nrdb_bgsave_in_progress:0\r\n"
                    "aof_enabled:0\r\naof_rewrite_in_progress:0\r\n");
}

static void rs_info_stats(const rserver *s, resp_buf *b)
{
    unsigned long long errors = 0;
    for (size_t i = 0; i < s->ncstat; i++)
        errors += s->cstat[i].failed + s->cstat[i].rejected;
    rs_info_head(b, "Stats");
    resp_buf_printf(b,
                    "total_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
                    "instantaneous_ops_per_sec:%llu\r\nrejected_connections:%llu\r\n"
                    "total_error_replies:%llu\r\n",
                    s->st.connections, s->st.commands, s->ops_per_sec, s->st.rejected, errors);
    rs_tls_info(s, b);
    rs_users_info(s, b);
}

typedef struct rs_stat_ctx {
    rserver *s;
    resp_buf *b;
    int latency;            /* latencystats rather than commandstats */
} rs_stat_ctx;

static void rs_info_cmdstat(const rs_command *cmd, void *arg)
{
    rs_stat_ctx *x = arg;
    const rs_cmdstat *st = rs_cmdstat_of(x->s, cmd);
    char lower[64];
    if (st == NULL || (st->lat.count == 0 && st->rejected == 0))
        return;
    rs_lower(cmd->name, lower, sizeof(lower));
    if (x->latency) {
        if (st->lat.count == 0)
            return;
        resp_buf_printf(x->b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n",
                        lower, (double)rs_hist_percentile(&st->lat, 0.50),
                        (double)rs_hist_percentile(&st->lat, 0.99),
                        (double)rs_hist_percentile(&st->lat, 0.999));
    } else {
        resp_buf_printf(x->b, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
                        "rejected_calls=%llu,failed_calls=%llu\r\n",
                        lower, st->lat.count, st->lat.sum_us,
                        st->lat.count ? (double)st->lat.sum_us / (double)st->lat.count : 0.0,
                        st->rejected, st->failed);
    }
}

/* Copies the program's sections that sel asks for (keyspace: 1 for the Keyspace
 * section only, 0 for all the others). */
static void rs_info_program(const rs_info_sel *sel, const resp_buf *text, resp_buf *b,
                            int keyspace)
{
    if (text->data == NULL)
        return;
    const char *p = text->data, *end = text->data + text->len;
    int on = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl + 1 : end;
        size_t len = (size_t)(e - p);
        while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r'))
            len--;
        if (len >= 2 && p[0] == '#' && p[1] == ' ') {
            const char *name = p + 2;
            size_t nlen = len - 2;
            int is_ks = resp_word_is(name, nlen, "keyspace");
            on = is_ks == keyspace && rs_info_want(sel, name, nlen, 1);
            if (on)
                resp_buf_printf(b, "%s# %.*s\r\n", b->len ? "\r\n" : "", (int)nlen, name);
        } else if (on && len > 0) {
            resp_buf_append(b, p, len);
            resp_buf_append(b, "\r\n", 2);
        }
        p = e;
    }
}

void rs_cmd_info(rs_req *r)
{
    rserver *s = r->c->s;
    rs_info_sel sel = { 0 };
    size_t argc = rs_req_argc(r);

    if (s == NULL) {
        rs_req_fail(r, RS_ERR, "server is shutting down");
        return;
    }
    sel.dflt = argc == 1;
    for (size_t i = 1; i < argc; i++) {
        size_t n;
        const char *a = rs_req_arg(r, i, &n);
        if (rs_arg_is(r, i, "all") || rs_arg_is(r, i, "everything"))
            sel.all = 1;
        else if (rs_arg_is(r, i, "default"))
            sel.dflt = 1;
        else if (sel.n < RS_INFO_MAX_SECTIONS && n < sizeof(sel.names[0]))
            rs_lower(a, sel.names[sel.n++], n + 1);
    }
    resp_buf b, prog;
    resp_buf_init(&b, 0);
    resp_buf_init(&prog, 0);
    if (s->opt.info)
        s->opt.info(s->opt.ctx, &prog);
    if (rs_info_want(&sel, "server", 6, 1))
        rs_info_server(s, &b);
    if (rs_info_want(&sel, "clients", 7, 1))
        rs_info_clients_section(s, &b);
    if (rs_info_want(&sel, "memory", 6, 1))
        rs_info_memory(&b);
    if (rs_info_want(&sel, "persistence", 11, 1))
        rs_info_persistence(&b);
    if (rs_info_want(&sel, "stats", 5, 1))
        rs_info_stats(s, &b);
    rs_info_program(&sel, &prog, &b, 0);
    rs_stat_ctx x = { s, &b, 0 };
    if (rs_info_want(&sel, "commandstats", 12, 0)) {
        rs_info_head(&b, "Commandstats");
        rs_each_command(s, rs_info_cmdstat, &x);
    }
    if (rs_info_want(&sel, "latencystats", 12, 0)) {
        rs_info_head(&b, "Latencystats");
        x.latency = 1;
        rs_each_command(s, rs_info_cmdstat, &x);
    }
    rs_info_program(&sel, &prog, &b, 1);
    resp_add_bulk(rs_req_out(r), b.data, b.len);
    resp_buf_free(&b);
    resp_buf_free(&prog);
    rs_req_finish(r);
}

/* ---- The built-in command table ---- */

/* Name, arity, flags, handler, summary, arguments (COMMAND DOCS); the program's own
 * commands come first in lookups. */
static const rs_arg rs_args_ping[] = { { "message", "string", NULL, RS_ARG_OPTIONAL, NULL },
                                       { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_auth[] = { { "username", "string", NULL, RS_ARG_OPTIONAL, NULL },
                                       { "password", "string", NULL, 0, NULL },
                                       { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_hello_auth[] = { { "username", "string", NULL, 0, NULL },
                                             { "password", "string", NULL, 0, NULL },
                                             { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_hello_proto[] = {
    { "protover", "integer", NULL, 0, NULL },
    { "auth", "block", "AUTH", RS_ARG_OPTIONAL, rs_args_hello_auth },
    { "clientname", "string", "SETNAME", RS_ARG_OPTIONAL, NULL },
    { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_hello[] = {
    { "arguments", "block", NULL, RS_ARG_OPTIONAL, rs_args_hello_proto },
    { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_sub[] = { { "subcommand", "string", NULL, 0, NULL },
                                      { "arg", "string", NULL, RS_ARG_OPTIONAL | RS_ARG_MULTIPLE,
                                        NULL },
                                      { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_select[] = { { "index", "integer", NULL, 0, NULL },
                                         { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_echo[] = { { "message", "string", NULL, 0, NULL },
                                       { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_info[] = { { "section", "string", NULL,
                                         RS_ARG_OPTIONAL | RS_ARG_MULTIPLE, NULL },
                                       { NULL, NULL, NULL, 0, NULL } };
static const rs_arg rs_args_command[] = { { "subcommand", "string", NULL, RS_ARG_OPTIONAL,
                                            NULL },
                                          { "arg", "string", NULL,
                                            RS_ARG_OPTIONAL | RS_ARG_MULTIPLE, NULL },
                                          { NULL, NULL, NULL, 0, NULL } };

#define RS_CONN (RS_CMD_NOAUTH | RS_CMD_CONN)
const rs_command rs_builtin[] = {
    { "PING", -1, RS_CMD_NOAUTH | RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_ping,
      "Returns PONG, or the message given.", rs_args_ping },
    { "AUTH", -2, RS_CMD_NOAUTH | RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_auth,
      "Authenticates the connection: AUTH [user] password (users: aclfile).", rs_args_auth },
    { "QUIT", -1, RS_CMD_NOAUTH | RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_quit,
      "Closes the connection once the replies before it are sent.", NULL },
    { "HELLO", -1, RS_CMD_NOAUTH | RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_hello,
      "Handshake: protocol 2 or 3, optional AUTH and SETNAME; returns the server's "
      "properties.", rs_args_hello },
    { "CLIENT", -2, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_client,
      "Connection commands: ID, SETNAME, GETNAME, SETINFO, LIST, INFO, NO-EVICT, "
      "NO-TOUCH, REPLY ON, HELP.", rs_args_sub },
    { "SELECT", 2, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_select,
      "Selects database 0, the only one.", rs_args_select },
    { "ECHO", 2, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_echo, "Returns the message given.",
      rs_args_echo },
    { "INFO", -1, RS_CMD_SERVER | RS_CMD_CAT_READ, rs_cmd_info,
      "Server information and statistics by section, as Redis's INFO.", rs_args_info },
    { "COMMAND", -1, RS_CMD_SERVER | RS_CMD_CAT_READ, rs_cmd_command,
      "The command table: COUNT, LIST, INFO [name ...], DOCS [name ...].", rs_args_command },
    { "CONFIG", -2, RS_CMD_SERVER | RS_CMD_CAT_ADMIN, rs_cmd_config,
      "CONFIG GET: the Redis settings that describe this server (save, appendonly, "
      "databases, maxclients, timeout, port, bind, maxmemory); CONFIG SET is refused.",
      rs_args_sub },
    { "SLOWLOG", -2, RS_CMD_SERVER | RS_CMD_CAT_ADMIN, rs_cmd_slowlog,
      "The requests that took longer than slowlog-log-slower-than: GET [count], LEN, "
      "RESET, HELP.", rs_args_sub },
    { "MULTI", 1, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_notx,
      "Not supported: transactions. Send the commands as a plain pipeline.", NULL },
    { "EXEC", 1, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_notx,
      "Not supported: transactions.", NULL },
    { "DISCARD", 1, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_notx,
      "Not supported: transactions.", NULL },
    { "WATCH", -2, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_notx,
      "Not supported: transactions.", NULL },
    { "UNWATCH", 1, RS_CMD_CONN | RS_CMD_CAT_READ, rs_cmd_notx,
      "Not supported: transactions.", NULL },
};
const size_t rs_nbuiltin = sizeof(rs_builtin) / sizeof(rs_builtin[0]);
#undef RS_CONN
