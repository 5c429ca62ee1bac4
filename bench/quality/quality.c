/* bench/quality/quality.c: detection quality of text fingerprint settings on real
 * text. For each setting (feature scheme) it measures how often word-edited copies of
 * a document stay within k bits of the original, how often unrelated documents of the
 * corpus come within k bits of each other, and how many real near-duplicate pairs of
 * the corpus (word-3-shingle Jaccard >= 0.5) are found. See bench/quality/README.md.
 *
 * usage: bench-quality [-v] [-t THREADS] [-m MAXDOCS] [-s SEED] [-o SETTINGS] LIST
 * LIST has one "category<TAB>path[<TAB>label]" (or just "path") per line; "-" reads
 * stdin. -v also lists the false matches at distance 3 of every setting.
 * Prints one machine-readable line per setting, then a markdown table. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fingerprint.h"

#include "../bench_util.h"
#include "quality.h"

#define MIN_WORDS 200
#define MAX_WORDS 50000
#define MAX_FILE_BYTES (16u << 20)     /* larger files are skipped unread */
#define MAX_CATS 16
#define MH_K 128                        /* MinHash values per document */
#define MH_MIN_EST 0.3                  /* exact Jaccard for pairs estimated >= this */
#define NCOPY 5                         /* 1%, 3%, 5%, 10% edits, moved block */
#define NK 3                            /* distances 3, 4, 5 */
#define KMIN 3
#define JAC_DUP 0.5
#define JAC_HIGH 0.8

static const double edit_rate[4] = {0.01, 0.03, 0.05, 0.10};
static const char *const copy_name[NCOPY] = {"e1", "e3", "e5", "e10", "move"};

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench-quality: out of memory (%zu bytes)\n", n);
        exit(2);
    }
    return p;
}

void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fprintf(stderr, "bench-quality: out of memory (%zu x %zu bytes)\n", n, sz);
        exit(2);
    }
    return p;
}

/* Grow *p (elements of sz bytes, capacity *cap) to hold at least need elements. */
void grow(void **p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 1024;
    while (c < need) {
        if (c > (SIZE_MAX / 2) / sz) {
            fprintf(stderr, "bench-quality: buffer too large\n");
            exit(2);
        }
        c *= 2;
    }
    void *q = realloc(*p, c * sz);
    if (!q) {
        fprintf(stderr, "bench-quality: out of memory (%zu bytes)\n", c * sz);
        exit(2);
    }
    *p = q;
    *cap = c;
}


/* ---- Documents ---- */


typedef struct doc {
    char *text;
    size_t textlen;
    tok *t;
    size_t n;
    uint64_t key;             /* seeded hash of the token hash sequence */
    int cat;
    char *name;               /* label (the original file) */
    uint64_t *sh;             /* sorted distinct word-3-shingle hashes */
    size_t nsh;
    uint64_t mh[MH_K];
} doc;

static char cat_name[MAX_CATS][32];
static int ncat;

static int cat_index(const char *s, size_t len)
{
    if (len >= sizeof cat_name[0])
        len = sizeof cat_name[0] - 1;
    for (int i = 0; i < ncat; i++)
        if (strlen(cat_name[i]) == len && memcmp(cat_name[i], s, len) == 0)
            return i;
    if (ncat == MAX_CATS)
        return MAX_CATS - 1;
    memcpy(cat_name[ncat], s, len);
    cat_name[ncat][len] = 0;
    return ncat++;
}

typedef struct tokbuf {
    tok *t;
    size_t n, cap;
} tokbuf;

static int tok_cb(const char *p, size_t len, void *arg)
{
    tokbuf *b = arg;
    if (b->n >= MAX_WORDS + 1)
        return 1;             /* too long for the corpus: stop early */
    grow((void **)&b->t, &b->cap, b->n + 1, sizeof(tok));
    if (len > UINT32_MAX)
        len = UINT32_MAX;
    b->t[b->n].p = p;
    b->t[b->n].len = (uint32_t)len;
    b->t[b->n].h = fp_token_hash(p, len);
    b->n++;
    return 0;
}

/* Read a whole file of at most MAX_FILE_BYTES; NULL when unreadable or too large. */
static char *read_file(const char *path, size_t *lenp)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        grow((void **)&buf, &cap, n + 65536, 1);
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n > MAX_FILE_BYTES) {
            free(buf);
            fclose(f);
            return NULL;
        }
        if (r == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    *lenp = n;
    return buf;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_doc_key(const void *a, const void *b)
{
    const doc *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

/* Word-3-shingle hash of t[i..i+3): the project's window-3 feature. */
static uint64_t shingle3(const tok *t)
{
    uint64_t le[3] = {le64(t[0].h), le64(t[1].h), le64(t[2].h)};
    return XXH3_64bits(le, sizeof le);
}

/* Sorted distinct word-3-shingle hashes of t[0..n) into a new array (*np of them). */
static uint64_t *shingle_set(const tok *t, size_t n, size_t *np)
{
    size_t m = n >= 3 ? n - 2 : 0;
    uint64_t *s = xmalloc(m * sizeof *s);
    for (size_t i = 0; i < m; i++)
        s[i] = shingle3(t + i);
    qsort(s, m, sizeof *s, cmp_u64);
    size_t k = 0;
    for (size_t i = 0; i < m; i++)
        if (k == 0 || s[i] != s[k - 1])
            s[k++] = s[i];
    *np = k;
    return s;
}

static double jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    if (na + nb == 0)
        return 1.0;
    size_t i = 0, j = 0, inter = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            i++;
        else if (a[i] > b[j])
            j++;
        else {
            inter++;
            i++;
            j++;
        }
    }
    return (double)inter / (double)(na + nb - inter);
}

/* ---- Edited copies ---- */

typedef struct edit_op {
    size_t pos;
    unsigned seq;
    int kind;                 /* 0 replace, 1 insert before, 2 delete */
} edit_op;

static int cmp_op(const void *a, const void *b)
{
    const edit_op *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static tok *vocab;            /* one token per distinct token hash of the corpus */
static size_t nvocab;

/* Copy c of document d into out (capacity managed), *outn tokens. */
static void make_copy(const doc *d, int c, uint64_t seed, tok **out, size_t *cap,
                      size_t *outn, edit_op **ops, size_t *ops_cap)
{
    uint64_t rng = bench_splitmix(seed ^ d->key) + 0x632BE59BD9B4E019ull * (uint64_t)(c + 1);
    size_t n = d->n;
    if (c == NCOPY - 1) {
        /* a block of round(10%) of the tokens moved to another place */
        size_t m = (size_t)llround(0.10 * (double)n);
        if (m < 1)
            m = 1;
        size_t s = bench_next(&rng) % (n - m + 1);
        size_t rest = n - m;              /* tokens outside the block */
        size_t at = bench_next(&rng) % rest;  /* insert before rest[at'] where at' != s */
        if (at >= s)
            at++;                         /* at in [0, rest], at != s */
        grow((void **)out, cap, n, sizeof(tok));
        tok *o = *out;
        size_t k = 0;
        for (size_t r = 0; r <= rest; r++) {
            if (r == at) {
                memcpy(o + k, d->t + s, m * sizeof(tok));
                k += m;
            }
            if (r < rest) {
                size_t src = r < s ? r : r + m;
                o[k++] = d->t[src];
            }
        }
        *outn = k;
        return;
    }
    size_t ne = (size_t)llround(edit_rate[c] * (double)n);
    if (ne < 1)
        ne = 1;
    grow((void **)ops, ops_cap, ne, sizeof(edit_op));
    edit_op *op = *ops;
    for (size_t i = 0; i < ne; i++) {
        op[i].kind = (int)(bench_next(&rng) % 3);
        op[i].pos = bench_next(&rng) % n;
        op[i].seq = (unsigned)i;
    }
    qsort(op, ne, sizeof *op, cmp_op);
    grow((void **)out, cap, n + ne, sizeof(tok));
    tok *o = *out;
    size_t k = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        int state = 0;                    /* 0 kept, 1 replaced, 2 deleted */
        for (; e < ne && op[e].pos == i; e++) {
            if (op[e].kind == 1)
                o[k++] = vocab[bench_next(&rng) % nvocab];
            else if (op[e].kind == 0 && state == 0)
                state = 1;
            else if (op[e].kind == 2)
                state = 2;
        }
        if (state == 1)
            o[k++] = vocab[bench_next(&rng) % nvocab];
        else if (state == 0)
            o[k++] = d->t[i];
    }
    *outn = k;
}

/* ---- Per-document work (threads) ---- */

static doc *docs;
static size_t ndocs;
static uint64_t g_seed = 20240601;
static uint64_t *fp_orig;     /* [NSET][ndocs] */
static uint8_t *dist_copy;    /* [NSET][ndocs][NCOPY] */
static double *jac_copy;      /* [ndocs][NCOPY] */
static int settings_on[NSET_MAX];
static size_t lib_mismatch;   /* originals whose wN fingerprint differs from fp_text */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static size_t next_doc;

static size_t take(size_t *ctr, size_t lim)
{
    pthread_mutex_lock(&mu);
    size_t i = *ctr < lim ? (*ctr)++ : lim;
    pthread_mutex_unlock(&mu);
    return i;
}

static void *doc_worker(void *arg)
{
    (void)arg;
    scratch sc;
    memset(&sc, 0, sizeof sc);
    tok *copy = NULL;
    size_t copy_cap = 0, copy_n = 0;
    edit_op *ops = NULL;
    size_t ops_cap = 0;
    char *joined = NULL;
    size_t joined_cap = 0;
    size_t mism = 0;
    for (size_t di; (di = take(&next_doc, ndocs)) < ndocs;) {
        doc *d = &docs[di];
        /* the original as fingerprinted: its tokens joined by single spaces; check
         * that the single-window settings agree with the library's fp_text */
        size_t jl = 0;
        for (size_t i = 0; i < d->n; i++)
            jl += d->t[i].len + 1;
        grow((void **)&joined, &joined_cap, jl + 1, 1);
        size_t o = 0;
        for (size_t i = 0; i < d->n; i++) {
            memcpy(joined + o, d->t[i].p, d->t[i].len);
            o += d->t[i].len;
            joined[o++] = ' ';
        }
        for (size_t s = 0; s < NSET; s++) {
            if (!settings_on[s])
                continue;
            const setting *st = &settings[s];
            uint64_t fo = fingerprint(st, d->t, d->n, &sc);
            fp_orig[s * ndocs + di] = fo;
            if (st->weight == WT_NONE && st->tokmode == TK_PLAIN &&
                (st->grams & (st->grams - 1)) == 0) {
                unsigned w = (unsigned)__builtin_ctz(st->grams) + 1;
                if (fp_text(joined, o, w) != fo)
                    mism++;
            }
        }
        for (int c = 0; c < NCOPY; c++) {
            make_copy(d, c, g_seed, &copy, &copy_cap, &copy_n, &ops, &ops_cap);
            size_t nsh;
            uint64_t *sh = shingle_set(copy, copy_n, &nsh);
            jac_copy[di * NCOPY + (size_t)c] = jaccard(d->sh, d->nsh, sh, nsh);
            free(sh);
            for (size_t s = 0; s < NSET; s++) {
                if (!settings_on[s])
                    continue;
                uint64_t fc = fingerprint(&settings[s], copy, copy_n, &sc);
                dist_copy[(s * ndocs + di) * NCOPY + (size_t)c] =
                    (uint8_t)__builtin_popcountll(fc ^ fp_orig[s * ndocs + di]);
            }
        }
    }
    pthread_mutex_lock(&mu);
    lib_mismatch += mism;
    pthread_mutex_unlock(&mu);
    free(sc.th);
    free(sc.f);
    free(sc.w);
    free(sc.hk);
    free(sc.hc);
    free(copy);
    free(ops);
    free(joined);
    return NULL;
}

/* ---- Pairs ---- */

typedef struct pairj {
    uint32_t a, b;
    double j;
} pairj;

static pairj *cand;           /* corpus pairs needing exact Jaccard, sorted by (a, b) */
static size_t ncand;
static size_t next_cand;

static void *jac_worker(void *arg)
{
    (void)arg;
    for (;;) {
        size_t base = take(&next_cand, (ncand + 63) / 64);
        if (base >= (ncand + 63) / 64)
            break;
        for (size_t i = base * 64; i < ncand && i < base * 64 + 64; i++) {
            const doc *x = &docs[cand[i].a], *y = &docs[cand[i].b];
            cand[i].j = jaccard(x->sh, x->nsh, y->sh, y->nsh);
        }
    }
    return NULL;
}

static void run_threads(void *(*fn)(void *), int nthreads)
{
    pthread_t th[64];
    int started = 0;
    for (int i = 0; i < nthreads && i < 64; i++) {
        if (pthread_create(&th[i], NULL, fn, NULL) != 0)
            break;
        started++;
    }
    if (started == 0)
        fn(NULL);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
}

/* ---- Results ---- */

typedef struct result {
    double recall[NK][NCOPY];         /* k = 3, 4, 5 */
    size_t false_m[NK];               /* corpus pairs within k with Jaccard < 0.5 */
    size_t corpus_m[NK];              /* corpus pairs within k */
    double fmr[NK];
    double lowjac[NK];                /* share of all matches (copies + pairs) with J < 0.5 */
    double near80[NK], near50[NK];
    int meets;
} result;

static void usage(void)
{
    fprintf(stderr, "usage: bench-quality [-v] [-t THREADS] [-m MAXDOCS] [-s SEED] "
                    "[-o SETTING,...] LIST\n");
    exit(2);
}

static int parse_num(const char *s, unsigned long long *v)
{
    char *e;
    errno = 0;
    *v = strtoull(s, &e, 10);
    return errno || e == s || *e || s[0] == '-';
}

int main(int argc, char **argv)
{
    int nthreads = 2;
    size_t maxdocs = 3000;
    const char *only = NULL;
    int verbose = 0;
    int i;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        unsigned long long v;
        if (!strcmp(argv[i], "-v")) {
            verbose = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        if (!strcmp(argv[i], "-t")) {
            if (parse_num(argv[++i], &v) || v < 1 || v > 64)
                usage();
            nthreads = (int)v;
        } else if (!strcmp(argv[i], "-m")) {
            if (parse_num(argv[++i], &v) || v < 2 || v > 1000000)
                usage();
            maxdocs = (size_t)v;
        } else if (!strcmp(argv[i], "-s")) {
            if (parse_num(argv[++i], &v))
                usage();
            g_seed = v;
        } else if (!strcmp(argv[i], "-o")) {
            only = argv[++i];
        } else {
            usage();
        }
    }
    if (i + 1 != argc)
        usage();
    for (size_t s = 0; s < NSET; s++) {
        settings_on[s] = 1;
        if (only && s > 0) {
            /* the baseline is always measured; others only when listed */
            settings_on[s] = 0;
            size_t nl = strlen(settings[s].name);
            for (const char *p = only; *p;) {
                const char *q = strchr(p, ',');
                size_t l = q ? (size_t)(q - p) : strlen(p);
                if (l == nl && !memcmp(p, settings[s].name, l))
                    settings_on[s] = 1;
                p += l + (q != NULL);
            }
        }
    }
    variants_init();
    if (NSET > NSET_MAX) {
        fprintf(stderr, "bench-quality: %zu settings, at most %d\n", NSET, NSET_MAX);
        return 2;
    }
    double t0 = bench_clock(CLOCK_MONOTONIC);

    /* ---- read the corpus ---- */
    FILE *lf = strcmp(argv[i], "-") ? fopen(argv[i], "r") : stdin;
    if (!lf) {
        fprintf(stderr, "bench-quality: %s: %s\n", argv[i], strerror(errno));
        return 2;
    }
    size_t docs_cap = 0, nfiles = 0, unreadable = 0, too_short = 0, too_long = 0, dups = 0;
    char line[8192];
    while (fgets(line, sizeof line, lf)) {
        size_t l = strlen(line);
        if (l && line[l - 1] == '\n')
            line[--l] = 0;
        else if (!feof(lf)) {
            int ch;               /* over-long line: skip the rest of it */
            while ((ch = fgetc(lf)) != EOF && ch != '\n')
                ;
            continue;
        }
        if (l == 0)
            continue;
        char *path = line, *tab = strchr(line, '\t'), *label;
        int cat = 0;
        if (tab) {
            cat = cat_index(line, (size_t)(tab - line));
            path = tab + 1;
        } else {
            cat = cat_index("all", 3);
        }
        label = strchr(path, '\t');
        if (label)
            *label++ = 0;
        else
            label = path;
        nfiles++;
        size_t tl;
        char *text = read_file(path, &tl);
        if (!text) {
            unreadable++;
            continue;
        }
        tokbuf b = {0};
        fp_tokenize(text, tl, tok_cb, &b);
        if (b.n < MIN_WORDS || b.n > MAX_WORDS) {
            if (b.n < MIN_WORDS)
                too_short++;
            else
                too_long++;
            free(b.t);
            free(text);
            continue;
        }
        grow((void **)&docs, &docs_cap, ndocs + 1, sizeof(doc));
        doc *d = &docs[ndocs++];
        memset(d, 0, sizeof *d);
        d->text = text;
        d->textlen = tl;
        d->t = b.t;
        d->n = b.n;
        d->cat = cat;
        d->name = strdup(label);
        if (!d->name) {
            fprintf(stderr, "bench-quality: out of memory\n");
            return 2;
        }
        uint64_t *hs = xmalloc(b.n * sizeof *hs);
        for (size_t k = 0; k < b.n; k++)
            hs[k] = le64(b.t[k].h);
        d->key = XXH3_64bits_withSeed(hs, b.n * sizeof *hs, g_seed);
        free(hs);
    }
    if (lf != stdin)
        fclose(lf);
    /* deterministic sample: order by the seeded key, drop repeated token sequences,
     * keep the first maxdocs */
    qsort(docs, ndocs, sizeof *docs, cmp_doc_key);
    size_t kept = 0, eligible;
    for (size_t k = 0; k < ndocs; k++) {
        if (kept && docs[k].key == docs[kept - 1].key) {
            dups++;
            free(docs[k].t);
            free(docs[k].text);
            free(docs[k].name);
            continue;
        }
        docs[kept++] = docs[k];
    }
    eligible = kept;
    for (size_t k = maxdocs; k < kept; k++) {
        free(docs[k].t);
        free(docs[k].text);
        free(docs[k].name);
    }
    ndocs = kept < maxdocs ? kept : maxdocs;
    if (ndocs < 2) {
        fprintf(stderr, "bench-quality: fewer than 2 documents in the corpus\n");
        return 1;
    }
    size_t ntok = 0, cat_docs[MAX_CATS] = {0};
    for (size_t k = 0; k < ndocs; k++) {
        ntok += docs[k].n;
        cat_docs[docs[k].cat]++;
    }

    /* vocabulary: one token of each distinct token hash */
    {
        size_t cap = 16;
        while (cap < 2 * ntok)
            cap *= 2;
        uint64_t *key = xcalloc(cap, sizeof *key);
        uint8_t *used = xcalloc(cap, 1);
        vocab = xmalloc(ntok * sizeof *vocab);
        for (size_t k = 0; k < ndocs; k++)
            for (size_t t = 0; t < docs[k].n; t++) {
                uint64_t h = docs[k].t[t].h;
                size_t s = (size_t)(h ^ (h >> 29)) & (cap - 1);
                while (used[s] && key[s] != h)
                    s = (s + 1) & (cap - 1);
                if (!used[s]) {
                    used[s] = 1;
                    key[s] = h;
                    vocab[nvocab++] = docs[k].t[t];
                }
            }
        free(key);
        free(used);
    }

    /* shingle sets and MinHash sketches */
    for (size_t k = 0; k < ndocs; k++) {
        doc *d = &docs[k];
        d->sh = shingle_set(d->t, d->n, &d->nsh);
        for (int m = 0; m < MH_K; m++)
            d->mh[m] = UINT64_MAX;
        for (size_t s = 0; s < d->nsh; s++)
            for (int m = 0; m < MH_K; m++) {
                uint64_t v = bench_splitmix(d->sh[s] ^ (0xA0761D6478BD642Full * (uint64_t)(m + 1)));
                if (v < d->mh[m])
                    d->mh[m] = v;
            }
    }
    double t_load = bench_clock(CLOCK_MONOTONIC) - t0;

    /* ---- fingerprints of originals and copies ---- */
    fp_orig = xcalloc(NSET * ndocs, sizeof *fp_orig);
    dist_copy = xcalloc(NSET * ndocs * NCOPY, 1);
    jac_copy = xcalloc(ndocs * NCOPY, sizeof *jac_copy);
    run_threads(doc_worker, nthreads);
    double t_fp = bench_clock(CLOCK_MONOTONIC) - t0 - t_load;

    /* ---- corpus pairs: candidates for exact Jaccard ---- */
    size_t npairs = ndocs * (ndocs - 1) / 2, cand_cap = 0, mh_cand = 0;
    for (uint32_t a = 0; a < ndocs; a++)
        for (uint32_t b = a + 1; b < ndocs; b++) {
            int need = 0;
            for (size_t s = 0; s < NSET && !need; s++)
                if (settings_on[s] &&
                    __builtin_popcountll(fp_orig[s * ndocs + a] ^ fp_orig[s * ndocs + b]) <=
                        KMIN + NK - 1)
                    need = 1;
            const uint64_t *x = docs[a].mh, *y = docs[b].mh;
            int same = 0;
            for (int m = 0; m < MH_K; m++)
                same += x[m] == y[m];
            if (same >= MH_MIN_EST * MH_K) {
                mh_cand++;
                need = 1;
            }
            if (need) {
                grow((void **)&cand, &cand_cap, ncand + 1, sizeof *cand);
                cand[ncand].a = a;
                cand[ncand].b = b;
                cand[ncand].j = 0;
                ncand++;
            }
        }
    run_threads(jac_worker, nthreads);   /* Jaccard of every candidate */
    size_t near_hi = 0, near_mid = 0;
    for (size_t c = 0; c < ncand; c++) {
        if (cand[c].j >= JAC_HIGH)
            near_hi++;
        else if (cand[c].j >= JAC_DUP)
            near_mid++;
    }
    size_t copies_lowjac[NCOPY] = {0};
    for (size_t d = 0; d < ndocs; d++)
        for (int c = 0; c < NCOPY; c++)
            copies_lowjac[c] += jac_copy[d * NCOPY + (size_t)c] < JAC_DUP;
    double t_pairs = bench_clock(CLOCK_MONOTONIC) - t0 - t_load - t_fp;

    /* ---- results ---- */
    static result res[NSET_MAX];
    for (size_t s = 0; s < NSET; s++) {
        if (!settings_on[s])
            continue;
        result *r = &res[s];
        size_t lowc[NK] = {0}, allc[NK] = {0};
        for (int k = 0; k < NK; k++)
            for (int c = 0; c < NCOPY; c++) {
                size_t hit = 0;
                for (size_t d = 0; d < ndocs; d++)
                    if (dist_copy[(s * ndocs + d) * NCOPY + (size_t)c] <= KMIN + k) {
                        hit++;
                        lowc[k] += jac_copy[d * NCOPY + (size_t)c] < JAC_DUP;
                    }
                allc[k] += hit;
                r->recall[k][c] = (double)hit / (double)ndocs;
            }
        size_t n80[NK] = {0}, n50[NK] = {0};
        for (size_t c = 0; c < ncand; c++) {
            int dd = __builtin_popcountll(fp_orig[s * ndocs + cand[c].a] ^
                                          fp_orig[s * ndocs + cand[c].b]);
            for (int k = 0; k < NK; k++) {
                if (dd > KMIN + k)
                    continue;
                r->corpus_m[k]++;
                if (cand[c].j < JAC_DUP)
                    r->false_m[k]++;
                if (cand[c].j >= JAC_HIGH)
                    n80[k]++;
                else if (cand[c].j >= JAC_DUP)
                    n50[k]++;
            }
        }
        for (int k = 0; k < NK; k++) {
            r->fmr[k] = (double)r->false_m[k] / (double)npairs;
            size_t all = allc[k] + r->corpus_m[k];
            r->lowjac[k] = all ? (double)(lowc[k] + r->false_m[k]) / (double)all : 0;
            r->near80[k] = near_hi ? (double)n80[k] / (double)near_hi : 0;
            r->near50[k] = near_mid ? (double)n50[k] / (double)near_mid : 0;
        }
    }
    const result *base = &res[0];
    for (size_t s = 0; s < NSET; s++) {
        if (!settings_on[s])
            continue;
        result *r = &res[s];
        r->meets = r->recall[0][1] >= 3.0 * base->recall[0][1] && r->recall[0][0] >= 0.75 &&
                   r->fmr[0] <= base->fmr[0] && r->fmr[0] <= 1e-4 && r->lowjac[0] <= 0.01;
    }
    double t_all = bench_clock(CLOCK_MONOTONIC) - t0;

    /* ---- output ---- */
    printf("corpus files=%zu unreadable=%zu too_short=%zu too_long=%zu duplicates=%zu "
           "eligible=%zu docs=%zu tokens=%zu vocabulary=%zu",
           nfiles, unreadable, too_short, too_long, dups, eligible, ndocs, ntok, nvocab);
    for (int c = 0; c < ncat; c++)
        printf(" docs_%s=%zu", cat_name[c], cat_docs[c]);
    printf("\n");
    printf("pairs=%zu minhash_candidates=%zu jaccard_computed=%zu near_j80=%zu near_j50=%zu",
           npairs, mh_cand, ncand, near_hi, near_mid);
    for (int c = 0; c < NCOPY; c++)
        printf(" copies_%s_jac_lt_0.5=%zu", copy_name[c], copies_lowjac[c]);
    printf(" fp_text_check=%s\n", lib_mismatch ? "MISMATCH" : "ok");
    printf("time load_s=%.1f fingerprints_s=%.1f pairs_s=%.1f total_s=%.1f threads=%d\n",
           t_load, t_fp, t_pairs, t_all, nthreads);
    for (size_t s = 0; s < NSET; s++) {
        if (!settings_on[s])
            continue;
        const result *r = &res[s];
        printf("setting=%s docs=%zu", settings[s].name, ndocs);
        for (int c = 0; c < NCOPY; c++)
            printf(" recall_k3_%s=%.4f", copy_name[c], r->recall[0][c]);
        for (int k = 1; k < NK; k++)
            for (int c = 0; c < NCOPY; c++)
                printf(" recall_k%d_%s=%.4f", KMIN + k, copy_name[c], r->recall[k][c]);
        printf(" ratio_k3_e3=%.2f", base->recall[0][1] > 0 ? r->recall[0][1] / base->recall[0][1] : 0);
        for (int k = 0; k < NK; k++)
            printf(" fmr_k%d=%.3g false_k%d=%zu corpus_matches_k%d=%zu", KMIN + k, r->fmr[k],
                   KMIN + k, r->false_m[k], KMIN + k, r->corpus_m[k]);
        for (int k = 0; k < NK; k++)
            printf(" lowjac_share_k%d=%.4f", KMIN + k, r->lowjac[k]);
        for (int k = 0; k < NK; k++)
            printf(" near_recall_k%d_j80=%.4f near_recall_k%d_j50=%.4f", KMIN + k, r->near80[k],
                   KMIN + k, r->near50[k]);
        printf(" meets_targets=%s\n", r->meets ? "yes" : "no");
    }
    if (verbose)
        for (size_t s = 0; s < NSET; s++) {
            if (!settings_on[s])
                continue;
            for (size_t c = 0; c < ncand; c++) {
                int dd = __builtin_popcountll(fp_orig[s * ndocs + cand[c].a] ^
                                              fp_orig[s * ndocs + cand[c].b]);
                if (dd <= KMIN && cand[c].j < JAC_DUP)
                    printf("false_match setting=%s distance=%d jaccard=%.3f a=%s b=%s\n",
                           settings[s].name, dd, cand[c].j, docs[cand[c].a].name,
                           docs[cand[c].b].name);
            }
        }
    printf("\n| setting | e1 | e3 | e3/w3 | e5 | e10 | move | e3 k4 | e3 k5 | FMR k3 | FMR k4 "
           "| FMR k5 | J<0.5 share k3 | near J>=0.8 | near J 0.5-0.8 | targets |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < NSET; s++) {
        if (!settings_on[s])
            continue;
        const result *r = &res[s];
        printf("| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2g (%zu) "
               "| %.2g (%zu) | %.2g (%zu) | %.4f | %.3f | %.3f | %s |\n",
               settings[s].name, r->recall[0][0], r->recall[0][1],
               base->recall[0][1] > 0 ? r->recall[0][1] / base->recall[0][1] : 0,
               r->recall[0][2], r->recall[0][3], r->recall[0][4], r->recall[1][1],
               r->recall[2][1], r->fmr[0], r->false_m[0], r->fmr[1], r->false_m[1], r->fmr[2],
               r->false_m[2], r->lowjac[0], r->near80[0], r->near50[0],
               r->meets ? "**all met**" : "no");
    }
    printf("\n(recall at k=3 unless marked; FMR = corpus pairs within k bits with word-3-shingle "
           "Jaccard < 0.5 / %zu pairs, count in brackets; near = recall at k=3 of the %zu "
           "corpus pairs with J >= 0.8 and the %zu with 0.5 <= J < 0.8)\n",
           npairs, near_hi, near_mid);

    for (size_t k = 0; k < ndocs; k++) {
        free(docs[k].t);
        free(docs[k].text);
        free(docs[k].sh);
        free(docs[k].name);
    }
    free(docs);
    free(vocab);
    free(fp_orig);
    free(dist_copy);
    free(jac_copy);
    free(cand);
    return lib_mismatch ? 1 : 0;
}
