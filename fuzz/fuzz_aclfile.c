/* fuzz_aclfile.c: libFuzzer target for the users file parser (rs_acl_parse,
 * common/net/rs_acl.c). Checks: an error names a line; a table that loads answers
 * every question about every user without reading out of bounds; a user's rules never
 * allow a command that no rule of the input could allow (a file without '+' and
 * without "allcommands" allows nothing). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rs_acl.h"
#include "rserver.h"

static int fz_known(const char *name, size_t len, void *arg)
{
    (void)arg;
    return len > 0 && len <= 20 && memchr(name, 'x', len) == NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    rs_acl *a = rs_acl_parse((const char *)data, size, size % 2 ? fz_known : NULL, NULL,
                             err, sizeof(err));
    if (a == NULL) {
        if (strncmp(err, "line ", 5) != 0 && strcmp(err, "out of memory") != 0)
            abort();
        return 0;
    }
    int can_allow = memchr(data, '+', size) != NULL ||
                    memmem(data, size, "allcommands", 11) != NULL;
    static const unsigned cats[] = { 0, RS_CMD_CAT_READ, RS_CMD_CAT_WRITE, RS_CMD_CAT_SHARD,
                                     RS_CMD_CAT_ADMIN };
    for (size_t u = 0; u < rs_acl_nusers(a); u++) {
        const char *name = rs_acl_name(a, (int)u);
        if (rs_acl_find(a, name, strlen(name)) != (int)u)
            abort();
        (void)rs_acl_password_ok(a, (int)u, "secret", 6);
        for (size_t k = 0; k < sizeof(cats) / sizeof(cats[0]); k++)
            if (rs_acl_allows(a, (int)u, "SIMHASH.ADD", cats[k]) && !can_allow)
                abort();
    }
    rs_acl_free(a);
    return 0;
}
