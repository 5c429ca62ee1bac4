/* config.c: table-driven configuration from a file and the command line; see config.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "parse.h"

#define CFG_MAX_LINE 4096
#define CFG_MAX_FILE (1u << 20)
#define CFG_MAX_SECRET 512

struct cfg_state {
    const cfg_spec *spec;
    void *obj;
    unsigned char *set;         /* per option: 0 unset, 1 from the file, 2 from the command line */
    char **where;               /* per option: where it was set, for messages */
};

/* Rows of a spec: its own options, then the shared ones (index noptions + j). */
static size_t cfg_count(const cfg_spec *spec)
{
    return spec->noptions + spec->nshared;
}

/* Row i and (off non-NULL) its offset in the object; NULL for a shared row that a
 * row of the program's own with the same name replaces. */
static const cfg_option *cfg_row(const cfg_spec *spec, size_t i, size_t *off)
{
    if (i < spec->noptions) {
        if (off)
            *off = spec->options[i].offset;
        return &spec->options[i];
    }
    const cfg_option *o = &spec->shared[i - spec->noptions];
    for (size_t j = 0; j < spec->noptions; j++)
        if (strcmp(spec->options[j].name, o->name) == 0)
            return NULL;
    if (off)
        *off = spec->shared_offset + o->offset;
    return o;
}

cfg_state *cfg_state_new(const cfg_spec *spec, void *obj)
{
    cfg_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return NULL;
    st->spec = spec;
    st->obj = obj;
    st->set = calloc(cfg_count(spec) + 1, 1);
    st->where = calloc(cfg_count(spec) + 1, sizeof(char *));
    if (st->set == NULL || st->where == NULL) {
        cfg_state_free(st);
        return NULL;
    }
    return st;
}

void cfg_state_free(cfg_state *st)
{
    if (st == NULL)
        return;
    if (st->where)
        for (size_t i = 0; i < cfg_count(st->spec); i++)
            free(st->where[i]);
    free(st->where);
    free(st->set);
    free(st);
}

static const cfg_option *cfg_find_option(const cfg_spec *spec, const char *name, size_t *idx)
{
    for (size_t i = 0; i < cfg_count(spec); i++) {
        const cfg_option *o = cfg_row(spec, i, NULL);
        if (o && strcmp(o->name, name) == 0) {
            *idx = i;
            return o;
        }
    }
    return NULL;
}

static void cfg_list_clear(cfg_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* Read the first line of a secret file into a malloc'ed string.
 * Returns NULL with err set (unreadable, empty, too long). */
static char *cfg_read_secret(const char *path, char *err, size_t errlen)
{
    char buf[CFG_MAX_SECRET + 2];
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *nl = strpbrk(buf, "\r\n");
    if (nl)
        *nl = '\0';
    else if (n > CFG_MAX_SECRET) {
        snprintf(err, errlen, "%s: secret longer than %d bytes", path, CFG_MAX_SECRET);
        return NULL;
    }
    if (buf[0] == '\0') {
        snprintf(err, errlen, "%s: empty secret", path);
        return NULL;
    }
    char *s = strdup(buf);
    if (s == NULL)
        snprintf(err, errlen, "out of memory");
    return s;
}

/* Parse a size: decimal digits with an optional k, m or g suffix (powers of 1024).
 * Returns 0, or -1 with *why. */
static int parse_size(const char *v, uint64_t *out, const char **why)
{
    size_t len = strlen(v);
    uint64_t mult = 1;
    if (len > 0) {
        char s = v[len - 1];
        if (s == 'k' || s == 'K')
            mult = 1024;
        else if (s == 'm' || s == 'M')
            mult = 1024 * 1024;
        else if (s == 'g' || s == 'G')
            mult = 1024ull * 1024 * 1024;
        if (mult > 1)
            len--;
    }
    uint64_t n;
    if (parse_u64(v, len, &n, why) != 0)
        return -1;
    if (n > UINT64_MAX / mult) {
        *why = "out of range";
        return -1;
    }
    *out = n * mult;
    return 0;
}

int cfg_set(cfg_state *st, const char *name, const char *value, const char *where,
            char *err, size_t errlen)
{
    size_t idx;
    const cfg_option *o = cfg_find_option(st->spec, name, &idx);
    char *field;
    const char *why = NULL;
    uint64_t n;
    int from_cli = where && where[0] == '-';

    if (o == NULL) {
        char secret[128];
        size_t j;
        snprintf(secret, sizeof(secret), "%s-file", name);
        if (cfg_find_option(st->spec, secret, &j) && cfg_row(st->spec, j, NULL)->type == CFG_SECRET)
            snprintf(err, errlen, "%s: unknown option '%s' (secrets are read from a file: use %s)",
                     where, name, secret);
        else
            snprintf(err, errlen, "%s: unknown option '%s'", where, name);
        return -1;
    }
    size_t off = 0;
    cfg_row(st->spec, idx, &off);
    field = (char *)st->obj + off;
    if (value == NULL) {
        snprintf(err, errlen, "%s: option '%s' needs a value", where, name);
        return -1;
    }
    switch (o->type) {
    case CFG_STR:
    case CFG_SECRET: {
        char *s = strdup(value);
        if (s == NULL) {
            snprintf(err, errlen, "%s: out of memory", where);
            return -1;
        }
        /* secrets: the path is kept until cfg_finish reads the file */
        free(*(char **)field);
        *(char **)field = s;
        break;
    }
    case CFG_UINT:
        if (parse_uint_range(value, strlen(value), o->min, o->max, &n, &why) != 0) {
            snprintf(err, errlen, "%s: %s '%s': %s", where, name, value, why);
            return -1;
        }
        *(unsigned *)field = (unsigned)n;
        break;
    case CFG_SIZE:
        if (parse_size(value, &n, &why) != 0 || n < o->min || n > o->max) {
            snprintf(err, errlen, "%s: %s '%s': %s (%llu..%llu, k/m/g suffixes allowed)", where,
                     name, value, why ? why : "out of range", (unsigned long long)o->min,
                     (unsigned long long)o->max);
            return -1;
        }
        *(size_t *)field = (size_t)n;
        break;
    case CFG_BOOL:
        if (!strcasecmp(value, "yes") || !strcasecmp(value, "true") || !strcasecmp(value, "on") ||
            !strcmp(value, "1"))
            *(int *)field = 1;
        else if (!strcasecmp(value, "no") || !strcasecmp(value, "false") ||
                 !strcasecmp(value, "off") || !strcmp(value, "0"))
            *(int *)field = 0;
        else {
            snprintf(err, errlen, "%s: %s '%s': expected yes or no", where, name, value);
            return -1;
        }
        break;
    case CFG_LOGLEVEL: {
        int lv = log_level_parse(value);
        if (lv < 0) {
            snprintf(err, errlen, "%s: %s '%s': expected debug, info, warning or error", where,
                     name, value);
            return -1;
        }
        *(int *)field = lv;
        break;
    }
    case CFG_LIST: {
        cfg_list *l = (cfg_list *)field;
        /* the command line replaces the file's list */
        if (from_cli && st->set[idx] == 1)
            cfg_list_clear(l);
        if (o->max > 0 && l->n >= o->max) {
            snprintf(err, errlen, "%s: too many '%s' options (at most %llu)", where, name,
                     (unsigned long long)o->max);
            return -1;
        }
        char **v = realloc(l->v, (l->n + 1) * sizeof(*v));
        if (v == NULL || (v[l->n] = strdup(value)) == NULL) {
            if (v)
                l->v = v;
            snprintf(err, errlen, "%s: out of memory", where);
            return -1;
        }
        l->v = v;
        l->n++;
        break;
    }
    }
    st->set[idx] = from_cli ? 2 : 1;
    free(st->where[idx]);
    st->where[idx] = strdup(where ? where : "?");
    return 0;
}

int cfg_parse_text(cfg_state *st, const char *text, const char *fname, char *err, size_t errlen)
{
    unsigned lineno = 0;
    const char *p = text;

    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[CFG_MAX_LINE];
        char where[300];

        lineno++;
        snprintf(where, sizeof(where), "%s:%u", fname, lineno);
        if (len >= sizeof(line)) {
            snprintf(err, errlen, "%s: line longer than %d bytes", where, CFG_MAX_LINE - 1);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol ? eol + 1 : p + len;

        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        char *end = s + strlen(s);
        while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            *--end = '\0';
        if (*s == '\0')
            continue;
        char *name = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
        if (*s == '\0') {
            snprintf(err, errlen, "%s: option '%s' needs a value", where, name);
            return -1;
        }
        *s++ = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        if (cfg_set(st, name, s, where, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int cfg_parse_file(cfg_state *st, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
        return -1;
    }
    char *text = malloc(CFG_MAX_FILE + 1);
    if (text == NULL) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = fread(text, 1, CFG_MAX_FILE + 1, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr || n > CFG_MAX_FILE) {
        free(text);
        snprintf(err, errlen, "%s: %s", path, rerr ? "read error" : "larger than 1 MiB");
        return -1;
    }
    text[n] = '\0';
    if (memchr(text, '\0', n) != NULL) {
        free(text);
        snprintf(err, errlen, "%s: contains a NUL byte (not a text file?)", path);
        return -1;
    }
    int rc = cfg_parse_text(st, text, path, err, errlen);
    free(text);
    return rc;
}

int cfg_finish(cfg_state *st, char *err, size_t errlen)
{
    const cfg_spec *spec = st->spec;
    char e2[256];

    for (size_t i = 0; i < cfg_count(spec); i++) {
        size_t off;
        const cfg_option *o = cfg_row(spec, i, &off);
        if (o == NULL)
            continue;
        char *field = (char *)st->obj + off;
        if (!st->set[i]) {
            if (o->flags & CFG_REQUIRED) {
                snprintf(err, errlen, "missing required option '%s' (%s)", o->name,
                         o->help ? o->help : "see --help");
                return -1;
            }
            if (o->def != NULL) {
                char where[128];
                snprintf(where, sizeof(where), "default of %s", o->name);
                if (cfg_set(st, o->name, o->def, where, err, errlen) != 0)
                    return -1;
                st->set[i] = 0;
            }
        }
        if (o->type == CFG_SECRET && *(char **)field != NULL) {
            char *path = *(char **)field;
            char *secret = cfg_read_secret(path, e2, sizeof(e2));
            if (secret == NULL) {
                snprintf(err, errlen, "%s: %s: %s", st->where[i] ? st->where[i] : o->name,
                         o->name, e2);
                return -1;
            }
            free(path);
            *(char **)field = secret;
        }
        if (o->type == CFG_LIST) {
            cfg_list *l = (cfg_list *)field;
            if (l->n < o->min) {
                snprintf(err, errlen, "option '%s' must be given at least %llu time(s)", o->name,
                         (unsigned long long)o->min);
                return -1;
            }
        }
    }
    if (spec->validate && spec->validate(st->obj, err, errlen) != 0)
        return -1;
    return 0;
}

void cfg_free_values(const cfg_spec *spec, void *obj)
{
    for (size_t i = 0; i < cfg_count(spec); i++) {
        size_t off;
        const cfg_option *o = cfg_row(spec, i, &off);
        if (o == NULL)
            continue;
        char *field = (char *)obj + off;
        if (o->type == CFG_STR || o->type == CFG_SECRET) {
            char **s = (char **)field;
            if (o->type == CFG_SECRET && *s)
                memset(*s, 0, strlen(*s));
            free(*s);
            *s = NULL;
        } else if (o->type == CFG_LIST) {
            cfg_list_clear((cfg_list *)field);
        }
    }
}

static const char *cfg_type_hint(cfg_type t)
{
    switch (t) {
    case CFG_STR: return "TEXT";
    case CFG_UINT: return "N";
    case CFG_SIZE: return "BYTES";
    case CFG_BOOL: return "yes|no";
    case CFG_LIST: return "TEXT";
    case CFG_SECRET: return "FILE";
    case CFG_LOGLEVEL: return "LEVEL";
    }
    return "X";
}

static void cfg_print_option(const cfg_option *o)
{
    char head[64];
    snprintf(head, sizeof(head), "--%s %s", o->name, cfg_type_hint(o->type));
    printf("  %-22s %s", head, o->help ? o->help : "");
    if (o->flags & CFG_REQUIRED)
        printf(" (required)");
    else if (o->def)
        printf(" (default %s)", o->def);
    if (o->type == CFG_LIST)
        printf(" (repeatable)");
    printf("\n");
}

static void cfg_print_help(const cfg_spec *spec)
{
    printf("Usage: %s [--config FILE] [--check-config] [--OPTION VALUE ...]\n\n%s\n\n",
           spec->program, spec->usage ? spec->usage : "");
    printf("Options (the same names work in the config file as `name value` lines):\n");
    printf("  --config FILE          read options from FILE (command line options win)\n");
    printf("  --check-config         check the configuration, print the first problem, exit\n");
    printf("  --help, --version\n");
    for (size_t i = 0; i < cfg_count(spec); i++) {
        const cfg_option *o = cfg_row(spec, i, NULL);
        if (i == spec->noptions && spec->nshared)
            printf("%s\n", spec->shared_title ? spec->shared_title : "");
        if (o)
            cfg_print_option(o);
    }
}

cfg_result cfg_load(const cfg_spec *spec, void *obj, int argc, char **argv)
{
    char err[512];
    const char *config = NULL;
    int check = 0;
    cfg_result res = CFG_EXIT_ERR;
    cfg_state *st;

    /* first pass: actions and --config */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cfg_print_help(spec);
            return CFG_EXIT_OK;
        }
        if (!strcmp(a, "--version")) {
            printf("%s %s\n", spec->program, SIMHASH_VERSION);
            return CFG_EXIT_OK;
        }
        if (!strcmp(a, "--check-config")) {
            check = 1;
        } else if (!strcmp(a, "--config")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: --config needs a file name\n", spec->program);
                return CFG_EXIT_ERR;
            }
            config = argv[++i];
        } else if (strncmp(a, "--", 2) == 0) {
            i++;        /* skip its value */
        } else {
            fprintf(stderr, "%s: unexpected argument '%s' (options are --name value)\n",
                    spec->program, a);
            return CFG_EXIT_ERR;
        }
    }
    st = cfg_state_new(spec, obj);
    if (st == NULL) {
        fprintf(stderr, "%s: out of memory\n", spec->program);
        return CFG_EXIT_ERR;
    }
    if (config && cfg_parse_file(st, config, err, sizeof(err)) != 0)
        goto bad;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--check-config"))
            continue;
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (cfg_set(st, a + 2, i + 1 < argc ? argv[i + 1] : NULL, a, err, sizeof(err)) != 0)
            goto bad;
        i++;
    }
    if (cfg_finish(st, err, sizeof(err)) != 0)
        goto bad;
    cfg_state_free(st);
    if (check) {
        printf("%s: configuration OK\n", spec->program);
        return CFG_EXIT_OK;
    }
    return CFG_RUN;
bad:
    fprintf(stderr, "%s: %s\n", spec->program, err);
    cfg_state_free(st);
    res = CFG_EXIT_ERR;
    return res;
}
