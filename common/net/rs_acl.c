/* rs_acl.c: the users file parser and the questions the server asks of it (is this
 * password one of the user's, may the user run this command). The format and the
 * roles are in rs_acl.h and docs/security.md#users-and-roles. Passwords are hashed
 * (SHA-256, libcrypto) as they are read; only digests stay in memory. */
#include "rs_acl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "rserver.h"

#define RS_ACL_DIGEST 32

typedef struct rs_acl_rule {
    int allow;                      /* + or - */
    unsigned cats;                  /* RS_CMD_CAT_* it covers; 0: the command `name` */
    char name[RS_ACL_NAME_MAX + 1];
} rs_acl_rule;

typedef struct rs_acl_user {
    char name[RS_ACL_NAME_MAX + 1];
    int on;
    unsigned npass, nrules;
    unsigned char pass[RS_ACL_MAX_PASSWORDS][RS_ACL_DIGEST];
    rs_acl_rule rules[RS_ACL_MAX_RULES];
} rs_acl_user;

struct rs_acl {
    rs_acl_user *users;
    size_t n, cap;
};

/* The roles: what each +@name covers. */
static const struct {
    const char *name;
    unsigned cats;
} rs_acl_roles[] = {
    { "read", RS_CMD_CAT_READ },
    { "write", RS_CMD_CAT_READ | RS_CMD_CAT_WRITE },
    { "shard", RS_CMD_CAT_READ | RS_CMD_CAT_SHARD },
    { "admin", RS_CMD_CAT_MASK },
    { "all", RS_CMD_CAT_MASK },
};

/* Rule words that mean nothing here (key and channel patterns of Redis). */
static const char *const rs_acl_noops[] = { "~*", "allkeys", "&*", "allchannels" };

/* SHA-256 of p[0..n) into out. Returns 0, or -1 (libcrypto failed). */
static int rs_acl_digest(const void *p, size_t n, unsigned char out[RS_ACL_DIGEST])
{
    unsigned int outlen = 0;
    if (EVP_Digest(p, n, out, &outlen, EVP_sha256(), NULL) != 1 || outlen != RS_ACL_DIGEST)
        return -1;
    return 0;
}

static int rs_acl_hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Formats "line N: ..." into err. Returns -1. */
static int rs_acl_fail(char *err, size_t errlen, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int rs_acl_fail(char *err, size_t errlen, unsigned line, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(err, errlen, "line %u: ", line);
    if (k >= 0 && (size_t)k < errlen) {
        va_start(ap, fmt);
        vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Printable copy of a token for an error message (at most 40 bytes shown). */
static const char *rs_acl_shown(char *dst, size_t cap, const char *t, size_t n)
{
    size_t j = 0;
    for (size_t i = 0; i < n && i < 40 && j + 4 < cap; i++) {
        unsigned char ch = (unsigned char)t[i];
        dst[j++] = (ch > 32 && ch < 127 && ch != '\'') ? (char)ch : '?';
    }
    if (n > 40 && j + 4 < cap) {
        memcpy(dst + j, "...", 3);
        j += 3;
    }
    dst[j] = '\0';
    return dst;
}

/* One rule token t[0..n) of user u. Returns 0, or -1 with err set. */
static int rs_acl_rule_parse(rs_acl_user *u, const char *t, size_t n, unsigned line,
                             rs_acl_known_fn known, void *arg, char *err, size_t errlen)
{
    char shown[64];
    if (n == 2 && memcmp(t, "on", 2) == 0) {
        u->on = 1;
        return 0;
    }
    if (n == 3 && memcmp(t, "off", 3) == 0) {
        u->on = 0;
        return 0;
    }
    for (size_t i = 0; i < sizeof(rs_acl_noops) / sizeof(rs_acl_noops[0]); i++)
        if (n == strlen(rs_acl_noops[i]) && memcmp(t, rs_acl_noops[i], n) == 0)
            return 0;
    if (t[0] == '>' || t[0] == '#') {
        if (u->npass >= RS_ACL_MAX_PASSWORDS)
            return rs_acl_fail(err, errlen, line, "user '%s' has more than %d passwords",
                               u->name, RS_ACL_MAX_PASSWORDS);
        unsigned char *d = u->pass[u->npass];
        if (t[0] == '>') {
            if (n < 2)
                return rs_acl_fail(err, errlen, line, "empty password after '>'");
            if (rs_acl_digest(t + 1, n - 1, d) != 0)
                return rs_acl_fail(err, errlen, line, "SHA-256 failed (libcrypto)");
        } else {
            if (n != 1 + 2 * RS_ACL_DIGEST)
                return rs_acl_fail(err, errlen, line,
                                   "'#' takes a SHA-256 digest: 64 hex digits, not %zu bytes",
                                   n - 1);
            for (size_t i = 0; i < RS_ACL_DIGEST; i++) {
                int hi = rs_acl_hexval(t[1 + 2 * i]), lo = rs_acl_hexval(t[2 + 2 * i]);
                if (hi < 0 || lo < 0)
                    return rs_acl_fail(err, errlen, line, "'#' digest is not hexadecimal");
                d[i] = (unsigned char)(hi << 4 | lo);
            }
        }
        u->npass++;
        return 0;
    }
    rs_acl_rule rule = { 0 };
    if (n == 11 && memcmp(t, "allcommands", 11) == 0) {
        rule = (rs_acl_rule){ .allow = 1, .cats = RS_CMD_CAT_MASK };
    } else if (n == 10 && memcmp(t, "nocommands", 10) == 0) {
        rule = (rs_acl_rule){ .allow = 0, .cats = RS_CMD_CAT_MASK };
    } else if ((t[0] == '+' || t[0] == '-') && n >= 3 && t[1] == '@') {
        rule.allow = t[0] == '+';
        for (size_t i = 0; i < sizeof(rs_acl_roles) / sizeof(rs_acl_roles[0]); i++)
            if (n - 2 == strlen(rs_acl_roles[i].name) &&
                strncasecmp(t + 2, rs_acl_roles[i].name, n - 2) == 0)
                rule.cats = rs_acl_roles[i].cats;
        if (rule.cats == 0)
            return rs_acl_fail(err, errlen, line,
                               "unknown role '%s' (read, write, shard, admin, all)",
                               rs_acl_shown(shown, sizeof(shown), t + 2, n - 2));
    } else if ((t[0] == '+' || t[0] == '-') && n >= 2) {
        rule.allow = t[0] == '+';
        if (memchr(t, '|', n))
            return rs_acl_fail(err, errlen, line, "subcommand rules ('%s') are not supported",
                               rs_acl_shown(shown, sizeof(shown), t, n));
        if (n - 1 > RS_ACL_NAME_MAX || (known && !known(t + 1, n - 1, arg)))
            return rs_acl_fail(err, errlen, line, "unknown command '%s'",
                               rs_acl_shown(shown, sizeof(shown), t + 1, n - 1));
        memcpy(rule.name, t + 1, n - 1);
        rule.name[n - 1] = '\0';
    } else {
        return rs_acl_fail(err, errlen, line, "unknown rule '%s'",
                           rs_acl_shown(shown, sizeof(shown), t, n));
    }
    if (u->nrules >= RS_ACL_MAX_RULES)
        return rs_acl_fail(err, errlen, line, "user '%s' has more than %d rules", u->name,
                           RS_ACL_MAX_RULES);
    u->rules[u->nrules++] = rule;
    return 0;
}

/* The next token of p[*i..n) (separated by spaces and tabs): its start and length in
 * *t / *tn. Returns 0 when the line has no more. */
static int rs_acl_token(const char *p, size_t n, size_t *i, const char **t, size_t *tn)
{
    while (*i < n && (p[*i] == ' ' || p[*i] == '\t' || p[*i] == '\r'))
        (*i)++;
    if (*i >= n)
        return 0;
    size_t s = *i;
    while (*i < n && p[*i] != ' ' && p[*i] != '\t' && p[*i] != '\r')
        (*i)++;
    *t = p + s;
    *tn = *i - s;
    return 1;
}

/* One line p[0..n) into a (comments and blank lines skip). Returns 0, or -1 with err. */
static int rs_acl_line(rs_acl *a, const char *p, size_t n, unsigned line,
                       rs_acl_known_fn known, void *arg, char *err, size_t errlen)
{
    size_t i = 0, tn;
    const char *t;
    char shown[64];
    if (!rs_acl_token(p, n, &i, &t, &tn) || t[0] == '#')
        return 0;
    if (memchr(p, '\0', n))
        return rs_acl_fail(err, errlen, line, "a NUL byte");
    if (tn != 4 || memcmp(t, "user", 4) != 0)
        return rs_acl_fail(err, errlen, line, "expected 'user <name> <rules>', not '%s'",
                           rs_acl_shown(shown, sizeof(shown), t, tn));
    if (!rs_acl_token(p, n, &i, &t, &tn))
        return rs_acl_fail(err, errlen, line, "'user' without a name");
    if (tn > RS_ACL_NAME_MAX)
        return rs_acl_fail(err, errlen, line, "user name longer than %d bytes",
                           RS_ACL_NAME_MAX);
    for (size_t k = 0; k < tn; k++)
        if ((unsigned char)t[k] <= 32 || (unsigned char)t[k] >= 127)
            return rs_acl_fail(err, errlen, line, "user name with a byte that is not "
                               "printable ASCII");
    if (rs_acl_find(a, t, tn) >= 0)
        return rs_acl_fail(err, errlen, line, "user '%.*s' defined twice", (int)tn, t);
    if (a->n >= RS_ACL_MAX_USERS)
        return rs_acl_fail(err, errlen, line, "more than %d users", RS_ACL_MAX_USERS);
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4;
        rs_acl_user *nu = realloc(a->users, cap * sizeof(*nu));
        if (nu == NULL)
            return rs_acl_fail(err, errlen, line, "out of memory");
        a->users = nu;
        a->cap = cap;
    }
    rs_acl_user *u = &a->users[a->n];
    memset(u, 0, sizeof(*u));
    memcpy(u->name, t, tn);
    while (rs_acl_token(p, n, &i, &t, &tn))
        if (rs_acl_rule_parse(u, t, tn, line, known, arg, err, errlen) != 0)
            return -1;
    a->n++;
    return 0;
}

rs_acl *rs_acl_parse(const char *text, size_t len, rs_acl_known_fn known, void *arg,
                     char *err, size_t errlen)
{
    rs_acl *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    unsigned line = 1;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        if (n > RS_ACL_MAX_LINE) {
            rs_acl_fail(err, errlen, line, "longer than %d bytes", RS_ACL_MAX_LINE);
            rs_acl_free(a);
            return NULL;
        }
        if (rs_acl_line(a, text + i, n, line, known, arg, err, errlen) != 0) {
            rs_acl_free(a);
            return NULL;
        }
        i += n + (nl != NULL);
        line++;
    }
    return a;
}

rs_acl *rs_acl_load(const char *path, rs_acl_known_fn known, void *arg, char *err,
                    size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "aclfile %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(RS_ACL_MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, RS_ACL_MAX_FILE + 1, f) : 0;
    int bad = buf == NULL || ferror(f);
    fclose(f);
    if (bad || n > RS_ACL_MAX_FILE) {
        snprintf(err, errlen, "aclfile %s: %s", path,
                 buf == NULL ? "out of memory"
                 : n > RS_ACL_MAX_FILE ? "larger than 1 MiB" : "read error");
        free(buf);
        return NULL;
    }
    char why[400];
    rs_acl *a = rs_acl_parse(buf, n, known, arg, why, sizeof(why));
    free(buf);
    if (a == NULL)
        snprintf(err, errlen, "aclfile %s: %s", path, why);
    return a;
}

void rs_acl_free(rs_acl *a)
{
    if (a == NULL)
        return;
    OPENSSL_cleanse(a->users, a->cap * sizeof(*a->users));
    free(a->users);
    free(a);
}

size_t rs_acl_nusers(const rs_acl *a)
{
    return a ? a->n : 0;
}

int rs_acl_find(const rs_acl *a, const char *name, size_t len)
{
    if (a == NULL || len > RS_ACL_NAME_MAX)
        return -1;
    for (size_t i = 0; i < a->n; i++)
        if (strlen(a->users[i].name) == len && memcmp(a->users[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

const char *rs_acl_name(const rs_acl *a, int user)
{
    return a->users[user].name;
}

int rs_acl_enabled(const rs_acl *a, int user)
{
    return a->users[user].on;
}

int rs_acl_password_ok(const rs_acl *a, int user, const char *pass, size_t len)
{
    const rs_acl_user *u = &a->users[user];
    unsigned char d[RS_ACL_DIGEST];
    if (rs_acl_digest(pass, len, d) != 0)
        return 0;
    int ok = 0;
    for (unsigned i = 0; i < u->npass; i++)
        ok |= CRYPTO_memcmp(d, u->pass[i], sizeof(d)) == 0;
    return ok && u->on;
}

int rs_acl_allows(const rs_acl *a, int user, const char *name, unsigned cat)
{
    const rs_acl_user *u = &a->users[user];
    cat &= RS_CMD_CAT_MASK;
    if (cat == 0)
        cat = RS_CMD_CAT_ADMIN;
    int allow = 0;
    for (unsigned i = 0; i < u->nrules; i++) {
        const rs_acl_rule *rl = &u->rules[i];
        if (rl->cats ? (rl->cats & cat) != 0 : strcasecmp(rl->name, name) == 0)
            allow = rl->allow;
    }
    return allow;
}
