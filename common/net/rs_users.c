/* rs_users.c: users and roles on the RESP server (aclfile, parsed by rs_acl.c): the
 * check at start, AUTH of a named user, the per-command permission check (-NOPERM),
 * the SIGHUP reload and its INFO and /metrics lines.
 *
 * A connection keeps its user's name and index; the rules are read from the live
 * table at every command, so a reload that changes a user's rules applies to its
 * open connections at their next command. A reload that removes a user or switches it
 * off closes that user's connections (as Redis does for a deleted user); one that only
 * removes a password leaves them open (they proved the password when it was valid).
 * The default user: "AUTH password" and "AUTH default password" check the file's
 * user `default` when it has one, else the requirepass password (password-file),
 * which opens every command. */
#include "rs_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "log.h"

typedef struct rs_users_table {
    const rs_command *cmds;
    size_t n;
} rs_users_table;

/* rs_acl_known_fn over a program table and the built-in commands. */
static int rs_users_known(const char *name, size_t len, void *arg)
{
    const rs_users_table *t = arg;
    for (size_t i = 0; i < t->n + rs_nbuiltin; i++) {
        const char *cn = i < t->n ? t->cmds[i].name : rs_builtin[i - t->n].name;
        if (strlen(cn) == len && strncasecmp(cn, name, len) == 0)
            return 1;
    }
    return 0;
}

int rs_users_file_check(const char *path, const rs_command *cmds, size_t n, char *err,
                        size_t errlen)
{
    if (path == NULL || path[0] == '\0')
        return 0;
    rs_users_table t = { cmds, n };
    rs_acl *a = rs_acl_load(path, rs_users_known, &t, err, errlen);
    if (a == NULL)
        return -1;
    rs_acl_free(a);
    return 0;
}

int rs_users_init(rserver *s, const char *path, char *err, size_t errlen)
{
    if (path == NULL || path[0] == '\0')
        return 0;
    rs_users_table t = { s->opt.commands, s->opt.ncommands };
    s->acl = rs_acl_load(path, rs_users_known, &t, err, errlen);
    if (s->acl == NULL)
        return -1;
    snprintf(s->acl_last_reload, sizeof(s->acl_last_reload), "ok");
    log_info("aclfile %s: %zu users", path, rs_acl_nusers(s->acl));
    return 0;
}

int rs_users_auth(rs_client *c, const char *user, size_t ulen, const char *pass,
                  size_t plen)
{
    rserver *s = c->s;
    if (user == NULL) {
        user = "default";
        ulen = 7;
    }
    int idx = rs_acl_find(s->acl, user, ulen);
    int ok;
    if (idx >= 0)
        ok = rs_acl_password_ok(s->acl, idx, pass, plen);
    else
        ok = ulen == 7 && memcmp(user, "default", 7) == 0 && s->password &&
             rs_secret_equal(pass, plen, s->password);
    if (!ok)
        return 0;
    c->user = idx;
    memcpy(c->user_name, user, ulen);       /* ulen <= RS_ACL_NAME_MAX: found or "default" */
    c->user_name[ulen] = '\0';
    return 1;
}

int rs_users_permit(rs_req *r, const rs_command *cmd)
{
    rs_client *c = r->c;
    rserver *s = c->s;
    if (c->user < 0 || (cmd->flags & RS_CMD_NOAUTH) ||
        rs_acl_allows(s->acl, c->user, cmd->name, cmd->flags))
        return 1;
    char lower[RS_ACL_NAME_MAX + 1];
    s->st.acl_denied++;
    rs_cmdstat *st = rs_cmdstat_of(s, cmd);
    if (st)
        st->rejected++;
    log_warn_rl("client %llu (%s): user %s may not run %s", (unsigned long long)c->id,
                c->addr, c->user_name, cmd->name);
    rs_req_fail(r, RS_NOPERM, "User %s has no permissions to run the '%s' command",
                c->user_name, rs_lower(cmd->name, lower, sizeof(lower)));
    return 0;
}

int rs_users_reload(rserver *s, const char *path)
{
    char err[400];
    if ((path == NULL || path[0] == '\0') != (s->acl == NULL)) {
        if (s->acl)
            log_error("SIGHUP: aclfile removed from the configuration: it stays in use "
                      "until a restart");
        else
            log_error("SIGHUP: aclfile %s added to the configuration: it takes effect at "
                      "the next start", path);
        return -1;
    }
    if (s->acl == NULL)
        return 0;
    rs_users_table t = { s->opt.commands, s->opt.ncommands };
    rs_acl *a = rs_acl_load(path, rs_users_known, &t, err, sizeof(err));
    if (a == NULL) {
        s->acl_reload_errors++;
        snprintf(s->acl_last_reload, sizeof(s->acl_last_reload), "failed: %s", err);
        log_error("SIGHUP: %s; the users loaded before stay in use", err);
        return -1;
    }
    rs_acl *old = s->acl;
    s->acl = a;
    s->acl_reloads++;
    snprintf(s->acl_last_reload, sizeof(s->acl_last_reload), "ok");
    unsigned closed = 0;
    for (rs_client *c = s->clients, *next; c; c = next) {
        next = c->next;
        if (!c->authed || c->user < 0)
            continue;
        c->user = rs_acl_find(a, c->user_name, strlen(c->user_name));
        if (c->user < 0 || !rs_acl_enabled(a, c->user)) {
            log_info("client %llu (%s): user %s removed or off: closing the connection",
                     (unsigned long long)c->id, c->addr, c->user_name);
            c->user = -2;           /* never used: the connection is closed */
            rs_client_close(c);
            closed++;
        }
    }
    rs_acl_free(old);
    log_info("SIGHUP: aclfile %s reloaded: %zu users; %u connections closed", path,
             rs_acl_nusers(a), closed);
    return 0;
}

void rs_users_info(const rserver *s, resp_buf *b)
{
    resp_buf_printf(b, "acl_denied:%llu\r\n", s->st.acl_denied);
    if (s->acl == NULL)
        return;
    resp_buf_printf(b, "acl_users:%zu\r\nacl_reloads:%llu\r\nacl_reload_errors:%llu\r\n"
                    "acl_last_reload:%s\r\n", rs_acl_nusers(s->acl), s->acl_reloads,
                    s->acl_reload_errors, s->acl_last_reload);
}

void rs_users_metrics(const rserver *s, resp_buf *b)
{
    rs_prom_family(b, "simhash_acl_denied_total", "counter",
                   "Commands refused with -NOPERM: outside the user's rules (aclfile).");
    resp_buf_printf(b, "simhash_acl_denied_total %llu\n", s->st.acl_denied);
    if (s->acl == NULL)
        return;
    rs_prom_family(b, "simhash_acl_reloads_total", "counter",
                   "SIGHUP reloads of the users file, by result.");
    resp_buf_printf(b, "simhash_acl_reloads_total{result=\"ok\"} %llu\n"
                    "simhash_acl_reloads_total{result=\"error\"} %llu\n", s->acl_reloads,
                    s->acl_reload_errors);
    rs_prom_family(b, "simhash_acl_users", "gauge", "Users of the users file in use.");
    resp_buf_printf(b, "simhash_acl_users %zu\n", rs_acl_nusers(s->acl));
}
