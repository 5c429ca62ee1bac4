/* bucketdir.c: bounds, split points, key suffixes and the cached directory of elastic
 * buckets (bucketdir.h). Pure functions and one sorted array; no Redis calls. */
#include "bucketdir.h"

#include <stdlib.h>
#include <string.h>

#include "layout.h"

/* ---- Bounds ---- */

bdir_bound bdir_bound_make(const void *s, size_t len)
{
    const uint8_t *b = s;
    uint64_t v = 0;
    if (len > BDIR_BOUND_MAX)
        len = BDIR_BOUND_MAX;
    for (size_t i = 0; i < len; i++)
        v |= (uint64_t)b[i] << (56 - 8 * i);
    return v | len;
}

size_t bdir_bound_bytes(bdir_bound b, uint8_t *out)
{
    size_t len = (size_t)(b & 0xff);
    for (size_t i = 0; i < len; i++)
        out[i] = (uint8_t)(b >> (56 - 8 * i));
    return len;
}

/* ---- Key suffixes ---- */

static const char bdir_hexdig[] = "0123456789abcdef";

static size_t bdir_hex(char *out, bdir_bound b)
{
    uint8_t bytes[BDIR_BOUND_MAX];
    size_t n = bdir_bound_bytes(b, bytes), k = 0;
    for (size_t i = 0; i < n; i++) {
        out[k++] = bdir_hexdig[bytes[i] >> 4];
        out[k++] = bdir_hexdig[bytes[i] & 15];
    }
    return k;
}

size_t bdir_suffix(char *buf, bdir_bound lo, bdir_bound hi)
{
    size_t k = bdir_hex(buf, lo);
    buf[k++] = '-';
    if (hi != BDIR_NONE)
        k += bdir_hex(buf + k, hi);
    buf[k] = '\0';
    return k;
}

size_t bdir_key(char *buf, size_t cap, char kind, unsigned table, unsigned shard,
                bdir_bound lo, bdir_bound hi)
{
    char suffix[BDIR_SUFFIX_MAX];
    size_t k = bdir_suffix(suffix, lo, hi);
    size_t n = layout_tag_key(buf, cap, kind, table, shard);
    if (n == 0 || n + 1 + k >= cap)
        return 0;
    buf[n] = ':';
    memcpy(buf + n + 1, suffix, k + 1);
    return n + 1 + k;
}

static int bdir_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Parses 0..14 lower-case hex digits (an even number) into a bound. */
static int bdir_unhex(const char *s, size_t len, bdir_bound *out)
{
    uint8_t bytes[BDIR_BOUND_MAX];
    if (len % 2 != 0 || len > 2 * BDIR_BOUND_MAX)
        return -1;
    for (size_t i = 0; i < len / 2; i++) {
        int h = bdir_hexval(s[2 * i]), l = bdir_hexval(s[2 * i + 1]);
        if (h < 0 || l < 0)
            return -1;
        bytes[i] = (uint8_t)(h << 4 | l);
    }
    *out = bdir_bound_make(bytes, len / 2);
    return 0;
}

int bdir_suffix_parse(const char *s, size_t len, bdir_bound *lo, bdir_bound *hi)
{
    const char *dash = memchr(s, '-', len);
    if (!dash)
        return -1;
    size_t nlo = (size_t)(dash - s), nhi = len - nlo - 1;
    bdir_bound a, b = BDIR_NONE;
    if (bdir_unhex(s, nlo, &a) != 0)
        return -1;
    if (nhi > 0 && bdir_unhex(dash + 1, nhi, &b) != 0)
        return -1;
    if (a >= b)
        return -1;
    *lo = a;
    *hi = b;
    return 0;
}

/* ---- The cached directory of one shard ---- */

static int bdir_grow(bdir_shard *d, size_t need)
{
    if (need <= d->cap)
        return 0;
    size_t cap = d->cap ? d->cap : 8;
    while (cap < need)
        cap *= 2;
    bdir_bound *lo = realloc(d->lo, cap * sizeof *lo);
    if (!lo)
        return -1;
    d->lo = lo;
    uint32_t *cnt = realloc(d->cnt, cap * sizeof *cnt);
    if (!cnt)
        return -1;              /* lo grew, cap did not: the next call grows both */
    d->cnt = cnt;
    d->cap = cap;
    return 0;
}

int bdir_shard_init(bdir_shard *d)
{
    memset(d, 0, sizeof *d);
    if (bdir_grow(d, 1) != 0)
        return -1;
    d->lo[0] = bdir_bound_make("", 0);
    d->cnt[0] = BDIR_COUNT_NONE;
    d->n = 1;
    return 0;
}

void bdir_shard_free(bdir_shard *d)
{
    free(d->lo);
    free(d->cnt);
    memset(d, 0, sizeof *d);
}

static int bdir_cmp(const void *a, const void *b)
{
    bdir_bound x = *(const bdir_bound *)a, y = *(const bdir_bound *)b;
    return (x > y) - (x < y);
}

int bdir_shard_load(bdir_shard *d, const bdir_bound *los, size_t n)
{
    bdir_bound *lo = malloc((n + 1) * sizeof *lo);
    uint32_t *cnt = malloc((n + 1) * sizeof *cnt);
    if (!lo || !cnt) {
        free(lo);
        free(cnt);
        return -1;
    }
    memcpy(lo, los, n * sizeof *lo);
    lo[n++] = bdir_bound_make("", 0);
    qsort(lo, n, sizeof *lo, bdir_cmp);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (lo[i] != lo[k - 1])
            lo[k++] = lo[i];
    /* counts of the buckets whose bounds stay (both lists sorted: one merge pass) */
    for (size_t i = 0, j = 0; i < k; i++) {
        bdir_bound hi = i + 1 < k ? lo[i + 1] : BDIR_NONE;
        while (j < d->n && d->lo[j] < lo[i])
            j++;
        cnt[i] = BDIR_COUNT_NONE;
        if (d->cnt && j < d->n && d->lo[j] == lo[i] && bdir_shard_hi(d, j) == hi)
            cnt[i] = d->cnt[j];
    }
    free(d->lo);
    free(d->cnt);
    d->lo = lo;
    d->cnt = cnt;
    d->n = k;
    d->cap = n;
    return 0;
}

/* The bounds split members whose bits are those of permuted fingerprints, close to
 * uniform, so bound i of n is usually near i/n of the range: the search starts at m's
 * proportional place and gallops from there (one or two cache lines of a directory of
 * hundreds of bounds, where a binary search reads eight or nine; a worker looks up 20
 * random shards a query). Skewed directories cost at most about twice a binary search. */
size_t bdir_shard_find(const bdir_shard *d, bdir_bound m)
{
    const bdir_bound *lo = d->lo;
    size_t n = d->n, a = 0, b = n;     /* lo[a] <= m; answer in [a, b) */
    if (n > 8 && n <= UINT32_MAX) {
        size_t g = (size_t)(((m >> 32) * (uint64_t)n) >> 32), step = 1;  /* g < n */
        if (lo[g] <= m) {
            for (a = g; a + step < n && lo[a + step] <= m; step *= 2)
                a += step;
            b = a + step < n ? a + step : n;
        } else {
            for (b = g; step < b && lo[b - step] > m; step *= 2)
                b -= step;
            a = step < b ? b - step : 0;    /* lo[0] is "", at or below every m */
        }
    }
    while (b - a > 1) {
        size_t c = a + (b - a) / 2;
        if (lo[c] <= m)
            a = c;
        else
            b = c;
    }
    return a;
}

int bdir_shard_add(bdir_shard *d, bdir_bound s)
{
    size_t i = bdir_shard_find(d, s);
    if (d->lo[i] == s)
        return 0;
    if (bdir_grow(d, d->n + 1) != 0)
        return -1;
    memmove(d->lo + i + 2, d->lo + i + 1, (d->n - i - 1) * sizeof *d->lo);
    memmove(d->cnt + i + 2, d->cnt + i + 1, (d->n - i - 1) * sizeof *d->cnt);
    d->lo[i + 1] = s;
    d->cnt[i] = d->cnt[i + 1] = BDIR_COUNT_NONE;
    d->n++;
    return 0;
}
