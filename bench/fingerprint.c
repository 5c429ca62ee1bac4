/* bench/fingerprint.c: throughput of fp_text (algorithm v1 with --window, and v5's
 * text path) on generated English-like or CJK text,
 * side by side with two baselines measured in the same process: a plain
 * isalnum tokenizer + FNV-1a + per-bit vote (no shingles), and a seomoz-like
 * recipe (runs of ASCII letters, Jenkins-style 64-bit hash, rolling window of 3).
 *
 * usage: bench-fingerprint [--text english|cjk] [--mib N] [--runs R] [--window W]
 * Prints one machine-readable line per implementation and the ratios. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fingerprint.h"
#include "parse.h"

#include "bench_util.h"

/* ---- Deterministic text ---- */

static uint64_t bench_rng = 0x9E3779B97F4A7C15ull;

/* The next pseudo-random number of the fixed sequence. */
static uint64_t bench_rand(void)
{
    return bench_next(&bench_rng);
}

/* Index in [0, n) drawn with weight 1/(i+1) (Zipf s=1) through the cumulative table. */
static size_t bench_zipf(const double *cum, size_t n)
{
    double u = (double)(bench_rand() >> 11) / 9007199254740992.0 * cum[n - 1];
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cum[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static double *bench_zipf_table(size_t n)
{
    double *cum = malloc(n * sizeof *cum);
    if (!cum) {
        fprintf(stderr, "bench-fingerprint: out of memory\n");
        exit(1);
    }
    double s = 0;
    for (size_t i = 0; i < n; i++)
        cum[i] = s += 1.0 / (double)(i + 1);
    return cum;
}

#define BENCH_WORDS 4000

/* About `size` bytes of English-like text: Zipf-distributed generated words,
 * capitalized sentence starts, commas, periods and paragraph newlines. */
static char *bench_english(size_t size, size_t *outlen)
{
    static const char letters[] = "eeeeeeeeeeeetttttttttaaaaaaaaooooooooiiiiiiinnnnnnnsssssshhhhhhrrrrrrddddlllluuucccmmmwwffggyyppbbvkjxqz";
    static char words[BENCH_WORDS][16];
    static size_t wlen[BENCH_WORDS];
    for (size_t i = 0; i < BENCH_WORDS; i++) {
        /* frequent words are short */
        size_t len = 1 + (i < 50 ? bench_rand() % 4 : i < 500 ? 2 + bench_rand() % 6 : 3 + bench_rand() % 10);
        for (size_t k = 0; k < len; k++)
            words[i][k] = letters[bench_rand() % (sizeof letters - 1)];
        wlen[i] = len;
    }
    double *cum = bench_zipf_table(BENCH_WORDS);
    char *t = malloc(size + 64);
    if (!t) {
        fprintf(stderr, "bench-fingerprint: out of memory\n");
        exit(1);
    }
    size_t n = 0, in_sentence = 0;
    while (n < size) {
        size_t w = bench_zipf(cum, BENCH_WORDS);
        memcpy(t + n, words[w], wlen[w]);
        if (in_sentence == 0)
            t[n] = (char)toupper((unsigned char)t[n]);
        n += wlen[w];
        in_sentence++;
        uint64_t r = bench_rand() % 100;
        if (in_sentence > 4 && r < 7) {
            t[n++] = '.';
            in_sentence = 0;
            t[n++] = bench_rand() % 8 == 0 ? '\n' : ' ';
        } else if (r < 14) {
            t[n++] = ',';
            t[n++] = ' ';
        } else if (r == 14) {
            memcpy(t + n, " 1987 ", 6);
            n += 6;
        } else {
            t[n++] = ' ';
        }
    }
    free(cum);
    *outlen = n;
    return t;
}

static size_t bench_put_utf8(char *t, uint32_t cp)
{
    if (cp < 0x800) {
        t[0] = (char)(0xC0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    t[0] = (char)(0xE0 | (cp >> 12));
    t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    t[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

/* About `size` bytes of CJK-like text: Zipf-distributed Han characters with some
 * kana, ideographic commas and full stops, and newlines. */
static char *bench_cjk(size_t size, size_t *outlen)
{
    enum { NCHARS = 3000 };
    uint32_t chars[NCHARS];
    for (size_t i = 0; i < NCHARS; i++)
        chars[i] = i % 5 == 4 ? 0x3041 + (uint32_t)(bench_rand() % 86)   /* hiragana */
                              : 0x4E00 + (uint32_t)(bench_rand() % 20000);
    double *cum = bench_zipf_table(NCHARS);
    char *t = malloc(size + 64);
    if (!t) {
        fprintf(stderr, "bench-fingerprint: out of memory\n");
        exit(1);
    }
    size_t n = 0;
    while (n < size) {
        n += bench_put_utf8(t + n, chars[bench_zipf(cum, NCHARS)]);
        uint64_t r = bench_rand() % 100;
        if (r < 5)
            n += bench_put_utf8(t + n, 0x3001);    /* 、 */
        else if (r < 8)
            n += bench_put_utf8(t + n, 0x3002);    /* 。 */
        else if (r == 8)
            t[n++] = '\n';
    }
    free(cum);
    *outlen = n;
    return t;
}

/* ---- Baselines ---- */

static uint64_t bench_vote_plain(int64_t *v, uint64_t h)
{
    for (unsigned i = 0; i < 64; i++)
        v[i] += (h >> i) & 1 ? 1 : -1;
    return h;
}

static uint64_t bench_vote_result(const int64_t *v)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < 64; i++)
        if (v[i] > 0)
            r |= (uint64_t)1 << i;
    return r;
}

/* isalnum tokens (ASCII lower-cased), FNV-1a 64 per token, per-bit int vote. */
static uint64_t bench_fnv(const char *text, size_t len)
{
    int64_t v[64] = {0};
    size_t i = 0;
    while (i < len) {
        while (i < len && !isalnum((unsigned char)text[i]))
            i++;
        if (i >= len)
            break;
        uint64_t h = 0xcbf29ce484222325ull;
        while (i < len && isalnum((unsigned char)text[i])) {
            h ^= (uint64_t)tolower((unsigned char)text[i]);
            h *= 0x100000001b3ull;
            i++;
        }
        bench_vote_plain(v, h);
    }
    return bench_vote_result(v);
}

/* Bob Jenkins' 64-bit mix (lookup8 style) over a byte string. */
static uint64_t bench_jenkins(const unsigned char *k, size_t len)
{
    uint64_t a = 0x9e3779b97f4a7c13ull, b = a, c = len;
#define BENCH_MIX(a, b, c) do { \
        a -= b; a -= c; a ^= (c >> 43); b -= c; b -= a; b ^= (a << 9); \
        c -= a; c -= b; c ^= (b >> 8); a -= b; a -= c; a ^= (c >> 38); \
        b -= c; b -= a; b ^= (a << 23); c -= a; c -= b; c ^= (b >> 5); \
        a -= b; a -= c; a ^= (c >> 35); b -= c; b -= a; b ^= (a << 49); \
        c -= a; c -= b; c ^= (b >> 11); a -= b; a -= c; a ^= (c >> 12); \
        b -= c; b -= a; b ^= (a << 18); c -= a; c -= b; c ^= (b >> 22); \
    } while (0)
    while (len >= 24) {
        uint64_t x[3];
        memcpy(x, k, 24);
        a += x[0];
        b += x[1];
        c += x[2];
        BENCH_MIX(a, b, c);
        k += 24;
        len -= 24;
    }
    unsigned char tail[24] = {0};
    memcpy(tail, k, len);
    uint64_t x[3];
    memcpy(x, tail, 24);
    a += x[0];
    b += x[1];
    c += x[2];
    BENCH_MIX(a, b, c);
#undef BENCH_MIX
    return c;
}

/* seomoz-like: runs of ASCII letters, Jenkins hash per token, rolling window of 3
 * token hashes combined by rotate-xor, per-bit int vote. */
static uint64_t bench_seomoz(const char *text, size_t len)
{
    int64_t v[64] = {0};
    uint64_t win[3] = {0};
    size_t ntok = 0, i = 0;
    unsigned char buf[256];
    while (i < len) {
        while (i < len && !isalpha((unsigned char)text[i]))
            i++;
        if (i >= len)
            break;
        size_t bl = 0;
        while (i < len && isalpha((unsigned char)text[i])) {
            if (bl < sizeof buf)
                buf[bl++] = (unsigned char)text[i];
            i++;
        }
        win[ntok % 3] = bench_jenkins(buf, bl);
        ntok++;
        if (ntok >= 3) {
            uint64_t a = win[(ntok - 3) % 3], b = win[(ntok - 2) % 3], c = win[(ntok - 1) % 3];
            bench_vote_plain(v, (a << 2 | a >> 62) ^ (b << 1 | b >> 63) ^ c);
        }
    }
    return bench_vote_result(v);
}

/* ---- Timing ---- */

/* CPU time of this thread: unlike wall time, not inflated while other processes
 * hold the core, so it shows one core's throughput on a shared machine. */
static double bench_cpu_now(void)
{
    return bench_clock(CLOCK_THREAD_CPUTIME_ID);
}

enum { IMPL_SIMHASH, IMPL_STREAM, IMPL_V5, IMPL_FNV, IMPL_SEOMOZ, IMPL_COUNT };
static const char *const impl_names[IMPL_COUNT] = { "simhash", "simhash-stream", "simhash-v5",
                                                    "fnv", "seomoz" };

/* Runs one implementation once over the text; returns the fingerprint. */
static uint64_t bench_run(int impl, const char *text, size_t len, unsigned window)
{
    switch (impl) {
    case IMPL_SIMHASH:
        return fp_text(text, len, window);
    case IMPL_STREAM: {
        fp_state *s = fp_state_new(window);
        if (!s) {
            fprintf(stderr, "bench-fingerprint: out of memory\n");
            exit(1);
        }
        for (size_t off = 0; off < len; off += 65536)
            fp_state_update(s, text + off, len - off < 65536 ? len - off : 65536);
        uint64_t r = fp_state_final(s);
        fp_state_free(s);
        return r;
    }
    case IMPL_V5: {
        fp_params v5 = {FP_V5, 0};
        return fp_text_p(text, len, &v5);
    }
    case IMPL_FNV:
        return bench_fnv(text, len);
    default:
        return bench_seomoz(text, len);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench-fingerprint [--text english|cjk] [--mib N] [--runs R] [--window W]\n"
               "  --text    kind of generated text (default english)\n"
               "  --mib     text size in MiB, 1..4096 (default 100)\n"
               "  --runs    timed runs per implementation, median reported, 1..101 (default 5)\n"
               "  --window  tokens per shingle for fp_text, 1..64 (default 3)\n");
}

int main(int argc, char **argv)
{
    const char *kind = "english";
    uint64_t mib = 100, runs = 5, window = 3;
    for (int i = 1; i < argc; i++) {
        const char *why = NULL;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench-fingerprint: %s: missing value or unknown option\n", argv[i]);
            usage(stderr);
            return 2;
        }
        const char *val = argv[++i];
        int rc = 0;
        if (!strcmp(argv[i - 1], "--text")) {
            if (strcmp(val, "english") && strcmp(val, "cjk")) {
                fprintf(stderr, "bench-fingerprint: --text: expected english or cjk, got '%s'\n", val);
                return 2;
            }
            kind = val;
        } else if (!strcmp(argv[i - 1], "--mib")) {
            rc = parse_uint_range(val, strlen(val), 1, 4096, &mib, &why);
        } else if (!strcmp(argv[i - 1], "--runs")) {
            rc = parse_uint_range(val, strlen(val), 1, 101, &runs, &why);
        } else if (!strcmp(argv[i - 1], "--window")) {
            rc = parse_uint_range(val, strlen(val), 1, FP_WINDOW_MAX, &window, &why);
        } else {
            fprintf(stderr, "bench-fingerprint: unknown option %s\n", argv[i - 1]);
            usage(stderr);
            return 2;
        }
        if (rc) {
            fprintf(stderr, "bench-fingerprint: %s '%s': %s\n", argv[i - 1], val, why);
            return 2;
        }
    }

    size_t len;
    double t0 = bench_now();
    char *text = !strcmp(kind, "cjk") ? bench_cjk((size_t)mib << 20, &len)
                                      : bench_english((size_t)mib << 20, &len);
    double mb = (double)len / 1048576.0;
    printf("# text=%s bytes=%zu generated_in_s=%.2f window=%u runs=%u\n",
           kind, len, bench_now() - t0, (unsigned)window, (unsigned)runs);

    double med[IMPL_COUNT], cmed[IMPL_COUNT];
    for (int impl = 0; impl < IMPL_COUNT; impl++) {
        double times[101], cpu[101];
        uint64_t fp = 0;
        for (unsigned r = 0; r < runs; r++) {
            double a = bench_now(), ca = bench_cpu_now();
            uint64_t x = bench_run(impl, text, len, (unsigned)window);
            times[r] = bench_now() - a;
            cpu[r] = bench_cpu_now() - ca;
            if (r > 0 && x != fp) {
                fprintf(stderr, "bench-fingerprint: %s gave different results across runs\n",
                        impl_names[impl]);
                return 1;
            }
            fp = x;
        }
        qsort(times, runs, sizeof times[0], bench_cmp_double);
        qsort(cpu, runs, sizeof cpu[0], bench_cmp_double);
        med[impl] = times[runs / 2];
        cmed[impl] = cpu[runs / 2];
        printf("bench=fingerprint text=%s impl=%s mib_s=%.1f median_s=%.4f cpu_mib_s=%.1f "
               "median_cpu_s=%.4f fp=%016llx\n", kind, impl_names[impl], mb / med[impl], med[impl],
               mb / cmed[impl], cmed[impl], (unsigned long long)fp);
    }
    printf("bench=fingerprint text=%s ratio_vs_fnv=%.2f ratio_vs_seomoz=%.2f stream_vs_text=%.2f "
           "cpu_ratio_vs_fnv=%.2f cpu_ratio_vs_seomoz=%.2f cpu_ratio_v5_vs_v1=%.2f "
           "cpu_ratio_v5_vs_fnv=%.2f\n",
           kind, med[IMPL_FNV] / med[IMPL_SIMHASH], med[IMPL_SEOMOZ] / med[IMPL_SIMHASH],
           med[IMPL_SIMHASH] / med[IMPL_STREAM], cmed[IMPL_FNV] / cmed[IMPL_SIMHASH],
           cmed[IMPL_SEOMOZ] / cmed[IMPL_SIMHASH], cmed[IMPL_SIMHASH] / cmed[IMPL_V5],
           cmed[IMPL_FNV] / cmed[IMPL_V5]);
    free(text);
    return 0;
}
