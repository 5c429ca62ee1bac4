/* fuzz_cli_input.c: libFuzzer target for the CLI's number-list parser
 * (cli_parse_u64_lines: one unsigned decimal 64-bit number per line).
 *
 * Differential check: the fast parser must agree with a plain reference built on
 * parse_u64 (split at '\n', drop one trailing '\r' per line, a final line may lack
 * its ending): the same numbers in the same order, or a failure on the same line
 * with the same reason. Any difference aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "parse.h"

/* Reference: returns 0 with the values, or -1 with the failing line and reason. */
static int ref_parse(const char *d, size_t len, uint64_t **out, size_t *n, size_t *bad_line,
                     const char **why)
{
    uint64_t *v = malloc((len / 2 + 1) * sizeof(*v));
    size_t count = 0, line = 0, pos = 0;

    if (v == NULL)
        abort();
    while (pos < len) {
        const char *nl = memchr(d + pos, '\n', len - pos);
        size_t l = (size_t)((nl ? nl : d + len) - (d + pos));
        size_t ll = l;
        line++;
        if (ll > 0 && d[pos + ll - 1] == '\r')
            ll--;
        if (parse_u64(d + pos, ll, &v[count], why) != 0) {
            free(v);
            *bad_line = line;
            return -1;
        }
        count++;
        pos += l + (nl ? 1 : 0);
    }
    *out = v;
    *n = count;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so reads past the end are caught */
    char *buf = malloc(size ? size : 1);
    uint64_t *got = NULL, *want = NULL;
    size_t ngot = 0, nwant = 0, bad_line = 0;
    const char *why = NULL;
    cli_parse_error e;

    if (buf == NULL)
        abort();
    memcpy(buf, data, size);
    memset(&e, 0, sizeof(e));
    int rc = cli_parse_u64_lines(buf, size, &got, &ngot, &e);
    int rrc = ref_parse(buf, size, &want, &nwant, &bad_line, &why);
    if (rc != rrc) {
        fprintf(stderr, "parser says %d, reference %d (line %zu)\n", rc, rrc, bad_line);
        abort();
    }
    if (rc == 0) {
        if (ngot != nwant || (ngot > 0 && memcmp(got, want, ngot * sizeof(*got)) != 0)) {
            fprintf(stderr, "parser read %zu numbers, reference %zu, or values differ\n", ngot,
                    nwant);
            abort();
        }
        if (ngot == 0 && got != NULL)
            abort();
    } else {
        if (e.line != bad_line || e.why == NULL || strcmp(e.why, why) != 0) {
            fprintf(stderr, "error at line %zu (%s), reference line %zu (%s)\n", e.line,
                    e.why ? e.why : "?", bad_line, why);
            abort();
        }
        if (e.text == NULL || e.text < buf || e.text + e.textlen > buf + size)
            abort();
        if (got != NULL)
            abort();
    }
    free(got);
    free(want);
    free(buf);
    return 0;
}
