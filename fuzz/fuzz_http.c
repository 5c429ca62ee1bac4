/* fuzz_http.c: libFuzzer target for the metrics endpoint's request parser
 * (rs_http_parse) and its Authorization check (rs_http_auth_ok), common/net/rs_http.c.
 * Checks: the method fits its buffer and is terminated, the path and the
 * Authorization value lie inside the input, and the check never accepts a value that
 * does not carry the password. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rs_int.h"

static int fz_inside(const char *p, size_t n, const char *buf, size_t len)
{
    return p == NULL || (p >= buf && p + n <= buf + len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    rs_http_req rq;
    if (rs_http_parse(buf, size, &rq) == 0) {
        if (memchr(rq.method, '\0', sizeof rq.method) == NULL ||
            !fz_inside(rq.path, rq.pathlen, buf, size) ||
            !fz_inside(rq.auth, rq.authlen, buf, size))
            abort();
        if (rs_http_auth_ok(rq.auth, rq.authlen, "s3cret") &&
            (rq.authlen < 6 || (memmem(rq.auth, rq.authlen, "s3cret", 6) == NULL &&
                                strncasecmp(rq.auth, "Basic ", 6) != 0)))
            abort();
    }
    free(buf);
    return 0;
}
