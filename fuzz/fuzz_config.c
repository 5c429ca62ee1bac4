/* fuzz_config.c: libFuzzer target for the daemons' config file parser
 * (cfg_parse_text, cfg_set, cfg_finish) with a table holding every option type but
 * secrets (whose values are file paths read from disk).
 *
 * The input is config text; the bytes after the first NUL, when present, are also
 * split at NULs into "--name value" pairs as the command line gives them. Checks:
 * no crash, leak or overrun under the sanitizers; on failure the message names the
 * place ("<fuzz>:LINE: ..." or "--name: ..."); on success every number lies within
 * its option's range. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

typedef struct fz_conf {
    char *bind;
    unsigned port;
    size_t max_bytes;
    int flag;
    cfg_list workers;
    int loglevel;
    unsigned required;
} fz_conf;

#define OPT(name, type, field, min, max, def, flags) \
    { name, type, offsetof(fz_conf, field), min, max, def, flags, "help text" }

static const cfg_option fz_options[] = {
    OPT("bind", CFG_STR, bind, 0, 0, "127.0.0.1", 0),
    OPT("port", CFG_UINT, port, 1, 65535, "7000", 0),
    OPT("max-bytes", CFG_SIZE, max_bytes, 16, 2ull << 30, "1m", 0),
    OPT("flag", CFG_BOOL, flag, 0, 0, "no", 0),
    OPT("worker", CFG_LIST, workers, 0, 4, NULL, 0),
    OPT("loglevel", CFG_LOGLEVEL, loglevel, 0, 0, "info", 0),
    OPT("required", CFG_UINT, required, 0, 10, NULL, CFG_REQUIRED),
};

static int fz_validate(void *obj, char *err, size_t errlen)
{
    fz_conf *c = obj;
    if (c->port == 1) {
        snprintf(err, errlen, "port 1 is refused by the validator");
        return -1;
    }
    return 0;
}

static const cfg_spec fz_spec = {
    "fuzz-config", "fuzzing", fz_options, sizeof(fz_options) / sizeof(fz_options[0]), fz_validate,
    NULL, NULL, 0, 0
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char err[512];
    fz_conf conf;

    if (text == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    memset(&conf, 0, sizeof(conf));
    err[0] = '\0';
    cfg_state *st = cfg_state_new(&fz_spec, &conf);
    if (st == NULL)
        abort();
    int rc = cfg_parse_text(st, text, "<fuzz>", err, sizeof(err));
    if (rc != 0 && strncmp(err, "<fuzz>:", 7) != 0) {
        fprintf(stderr, "file error without a place: '%s'\n", err);
        abort();
    }
    /* command-line pairs after the first NUL */
    size_t tlen = strlen(text);
    size_t pos = tlen + 1;
    while (rc == 0 && pos < size) {
        const char *name = text + pos;
        pos += strlen(name) + 1;
        const char *value = pos < size ? text + pos : NULL;
        if (value)
            pos += strlen(value) + 1;
        char where[64];
        snprintf(where, sizeof(where), "--%.40s", name);
        rc = cfg_set(st, name, value, where, err, sizeof(err));
        if (rc != 0 && strncmp(err, "--", 2) != 0) {
            fprintf(stderr, "command line error without a place: '%s'\n", err);
            abort();
        }
    }
    if (rc == 0 && cfg_finish(st, err, sizeof(err)) == 0) {
        if (conf.port < 2 || conf.port > 65535 || conf.max_bytes < 16 ||
            conf.max_bytes > (2ull << 30) || conf.required > 10 || conf.workers.n > 4 ||
            conf.bind == NULL || (conf.flag != 0 && conf.flag != 1)) {
            fprintf(stderr, "accepted a value out of range\n");
            abort();
        }
    }
    cfg_state_free(st);
    cfg_free_values(&fz_spec, &conf);
    free(text);
    return 0;
}
