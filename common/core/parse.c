/* parse.c: strict parsing of user-given numbers; see parse.h. */
#include "parse.h"

#include <stdio.h>
#include <string.h>

int parse_u64(const char *s, size_t len, uint64_t *out, const char **why)
{
    uint64_t v = 0;

    if (len == 0) {
        *why = "empty";
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned c = (unsigned char)s[i];
        if (c < '0' || c > '9') {
            *why = "not a decimal number";
            return -1;
        }
        c -= '0';
        if (v > (UINT64_MAX - c) / 10) {
            *why = "out of range (max 18446744073709551615)";
            return -1;
        }
        v = v * 10 + c;
    }
    *out = v;
    return 0;
}

int parse_uint_range(const char *s, size_t len, uint64_t min, uint64_t max,
                     uint64_t *out, const char **why)
{
    static __thread char msg[96];
    uint64_t v;
    const char *reason = NULL;

    int rc = parse_u64(s, len, &v, &reason);
    if (rc != 0 && reason[0] != 'o') {  /* "empty" or "not a decimal number" */
        *why = reason;
        return -1;
    }
    if (rc != 0 || v < min || v > max) { /* too large for 64 bits, or outside */
        snprintf(msg, sizeof(msg), "out of range (%llu..%llu)",
                 (unsigned long long)min, (unsigned long long)max);
        *why = msg;
        return -1;
    }
    *out = v;
    return 0;
}

int parse_info_line(const char *s, size_t len, const char *name, const char **val,
                    size_t *vlen)
{
    size_t nl = strlen(name);
    const char *p = s, *end = s + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t ll = eol ? (size_t)(eol - p) : (size_t)(end - p);
        if (ll > nl && memcmp(p, name, nl) == 0 && p[nl] == ':') {
            size_t vl = ll - nl - 1;
            if (vl > 0 && p[nl + vl] == '\r')
                vl--;
            *val = p + nl + 1;
            *vlen = vl;
            return 0;
        }
        p += ll + 1;
    }
    return -1;
}

int parse_info_str(const char *s, size_t len, const char *name, char *buf, size_t cap)
{
    const char *v;
    size_t vl;
    if (parse_info_line(s, len, name, &v, &vl) != 0)
        return -1;
    snprintf(buf, cap, "%.*s", (int)vl, v);
    return 0;
}
