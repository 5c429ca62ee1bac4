/* fuzz_cli_input.c: libFuzzer target for the CLI's input parsers:
 *   - cli_parse_u64_lines (one unsigned decimal 64-bit number per line: find-all,
 *     find-clusters, compute). Differential check: it must agree with a plain
 *     reference built on parse_u64 (split at '\n', drop one trailing '\r' per line,
 *     then the spaces and tabs around the number; a final line may lack its ending):
 *     the same numbers in the same order, or a
 *     failure on the same line with the same reason.
 *   - load_parse of `simhash load` ("fingerprint docid" lines), static in
 *     client/cli/cmd_net.c, which this file includes for that reason. Checks: on
 *     success every pair re-reads from the input (the fingerprint through parse_u64,
 *     the docid as the line's second field, NUL-terminated, without blanks or NULs,
 *     at most SHC_DOCID_MAX bytes; other bytes, '\r' inside the line too, are binary-safe
 *     parts of the id) and the count equals the number of lines; on
 *     failure the reported line lies inside the input.
 *   - lst_parse, the resume file of `simhash load --state`: what it accepts is
 *     written back byte for byte by lst_write's format (read through a file) and
 *     keeps done <= pairs, added <= done.
 * Any difference aborts. */
#include "../client/cli/cmd_net.c"

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
        size_t b = 0;                   /* blanks around the number are skipped */
        while (b < ll && d[pos + b] != '\0' && strchr(" \t\v\f", d[pos + b]))
            b++;
        while (ll > b && d[pos + ll - 1] != '\0' && strchr(" \t\v\f", d[pos + ll - 1]))
            ll--;
        if (parse_u64(d + pos + b, ll - b, &v[count], why) != 0) {
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

/* Lines of data as load_parse counts them (a final line without '\n' counts). */
static size_t count_lines(const char *d, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += d[i] == '\n';
    return n + (len > 0 && d[len - 1] != '\n');
}

/* The %XX decoding of s[0..n) as a plain reference: the bytes in out (cap >= n),
 * the length, or -1 at a bad escape. */
static long ref_unescape(const char *s, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        const char *h = i + 2 < n ? strchr(hex, s[i + 1]) : NULL;
        const char *l = i + 2 < n ? strchr(hex, s[i + 2]) : NULL;
        if (h == NULL || l == NULL || s[i + 1] == 0 || s[i + 2] == 0)
            return -1;
        out[o++] = (char)(((h - hex) % 16) * 16 + (l - hex) % 16);
        i += 2;
    }
    return (long)o;
}

static void check_load(const char *buf, size_t size)
{
    load_input in;
    cli_parse_error e;
    memset(&e, 0, sizeof(e));
    /* after the header of export --escape: one line less, ids decoded */
    size_t hl = strlen(NET_LOAD_ESCAPED_HEADER), skip = 0;
    if (size >= hl && memcmp(buf, NET_LOAD_ESCAPED_HEADER, hl) == 0 &&
        (size == hl || buf[hl] == '\n' || buf[hl] == '\r')) {
        skip = hl + (size > hl && buf[hl] == '\r');
        skip += skip < size && buf[skip] == '\n';
    }
    if (net_load_parse(buf, size, &in, &e) == 0) {
        const char *p = buf + skip;
        if (in.n != count_lines(p, size - skip)) {
            fprintf(stderr, "load: %zu pairs from %zu lines\n", in.n, count_lines(p, size - skip));
            abort();
        }
        for (size_t i = 0; i < in.n; i++) {
            const char *nl = memchr(p, '\n', (size_t)(buf + size - p));
            size_t ll = (size_t)((nl ? nl : buf + size) - p);
            size_t a = 0;
            uint64_t fp;
            const char *why;
            while (a < ll && p[a] != ' ' && p[a] != '\t')
                a++;
            if (parse_u64(p, a, &fp, &why) != 0 || fp != in.fps[i])
                abort();
            const char *id = in.docids[i];
            size_t idl = strlen(id);
            if (idl == 0 || idl > SHC_DOCID_MAX || (!skip && strpbrk(id, " \t\n") != NULL))
                abort();
            if (skip) {     /* the id field decoded by the reference is the id */
                size_t b = a, le = ll - (ll > 0 && p[ll - 1] == '\r');
                while (b < le && (p[b] == ' ' || p[b] == '\t'))
                    b++;
                size_t d = b;
                while (d < le && p[d] != ' ' && p[d] != '\t')
                    d++;
                char *ref = malloc(d - b + 1);
                long rl = ref ? ref_unescape(p + b, d - b, ref) : -1;
                if (rl != (long)idl || memcmp(ref, id, idl) != 0)
                    abort();
                free(ref);
            } else if (memmem(p + a, ll - a, id, idl) == NULL) {
                abort();
            }
            p = nl ? nl + 1 : buf + size;
        }
        net_load_input_free(&in);
    } else {
        if (e.why == NULL || e.line == 0 || e.line > count_lines(buf, size) + 1)
            abort();
        if (e.text < buf || e.text + e.textlen > buf + size)
            abort();
        net_load_input_free(&in);
    }
}

/* A state file the parser accepts is the one lst_write writes for its values. */
static void check_state(const char *buf, size_t size)
{
    lst_state st;
    if (lst_parse(buf, size, &st) != 0)
        return;
    if (st.done > st.pairs || st.added > st.done)
        abort();
    char path[] = "/tmp/fuzz_load_state.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return;
    close(fd);
    char back[600];
    FILE *f = NULL;
    size_t n = 0;
    if (lst_write(path, &st) == 0 && (f = fopen(path, "rb")) != NULL)
        n = fread(back, 1, sizeof back, f);
    if (f)
        fclose(f);
    unlink(path);
    if (f && (n != size || memcmp(back, buf, size) != 0)) {
        fprintf(stderr, "state file accepted but written back differently\n");
        abort();
    }
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
    check_state(buf, size);
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
    check_load(buf, size);
    free(buf);
    return 0;
}
