/* bench/quality/kgrams.c: bench-kgrams FILE...: for each file, one line: its path, a
 * tab, and the distinct hashes of its word K-grams as fingerprint algorithm v5 computes
 * them (fp_bp.h: v5's tokens, K = FPBP_K), in hexadecimal, sorted. What
 * bench/quality/bptable.py builds the boilerplate table from. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "fp_bp.h"

typedef struct kg_list {
    uint64_t *h;
    size_t n, cap;
} kg_list;

static void kg_add(uint64_t h, void *arg)
{
    kg_list *l = arg;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->h = realloc(l->h, l->cap * sizeof *l->h);
        if (l->h == NULL) {
            fprintf(stderr, "bench-kgrams: out of memory\n");
            exit(1);
        }
    }
    l->h[l->n++] = h;
}

static int kg_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The whole of path in a malloc'd buffer (*len bytes), or NULL. */
static char *kg_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (nb == NULL)
                free(buf);
            buf = nb;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    kg_list l = {NULL, 0, 0};
    for (int i = 1; i < argc; i++) {
        size_t len;
        char *text = kg_read(argv[i], &len);
        if (text == NULL) {
            fprintf(stderr, "bench-kgrams: cannot read %s\n", argv[i]);
            return 1;
        }
        l.n = 0;
        fpbp_kgrams(text, len, kg_add, &l);
        free(text);
        if (l.n)
            qsort(l.h, l.n, sizeof *l.h, kg_cmp);
        printf("%s\t", argv[i]);
        for (size_t j = 0; j < l.n; j++)
            if (j == 0 || l.h[j] != l.h[j - 1])
                printf("%s%016" PRIx64, j ? " " : "", l.h[j]);
        printf("\n");
    }
    free(l.h);
    return 0;
}
