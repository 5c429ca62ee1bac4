/* bench/html.c: throughput of HTML fingerprints (common/core/html.c: libxml2's HTML
 * parser, then the default algorithm, v5 (`html`: the page's tree and its article,
 * v5's text path)) on real pages, side by side with the default's text path on the
 * same bytes (fp_text_p, the pages read as text) in the same process, and libxml2's
 * HTML push parser alone (the same options and 64 KiB blocks, a SAX handler with no
 * callbacks): the ceiling any HTML path built on that parser can reach; and the
 * parser with the callbacks html.c registers doing nothing but count bytes
 * (`sax_empty`): what libxml2's callback machinery itself costs on the pages, the
 * floor under any fingerprint made from SAX events; and v5's text path on each page's
 * visible text alone (`visible_text`: gathered before the runs), the tokenizing and
 * voting an HTML path cannot avoid. The sum of sax_empty and visible_text is the floor
 * of an all-visible-text HTML path (`floor_vs_parser_only_cpu`); and the default's
 * HTML path with no article (`html_all_text`, FP_HTML_ALL_TEXT: the parser, html.c and
 * the default's text path interleaved as in a real run, which the floor's separate
 * passes are not), so that `html_vs_html_all_text_cpu` is what the tree and the
 * article cost.
 *
 * usage: bench-html [--runs R] LIST
 * LIST names one HTML file per line ("-": stdin). The pages are loaded into memory
 * first; each run times every path in turn (always in the same order, each after an
 * untimed pass over the first MiB of pages), fingerprinting every page once. Prints one
 * machine-readable line per path (median wall and per-thread CPU time), then the
 * ratios (medians of the runs' own) and unreadable_pages: the pages the default's
 * HTML path could not read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/HTMLparser.h>

#include "fingerprint.h"
#include "html.h"

#include "bench_util.h"

typedef struct bh_page {
    char *data;
    size_t len;
    char *text;               /* the visible text (all of it, blocks ended by "\n") */
    size_t tlen, tcap;
} bh_page;

/* fp_html_sink: appends to the page's visible text (dropped when out of memory:
 * the page's text is then shorter, the same in every run). */
static void bh_gather(void *arg, const char *text, size_t len)
{
    bh_page *pg = arg;
    if (pg->tlen + len > pg->tcap) {
        size_t cap = pg->tcap ? 2 * pg->tcap : 4096;
        while (cap < pg->tlen + len)
            cap *= 2;
        char *t = realloc(pg->text, cap);
        if (t == NULL)
            return;
        pg->text = t;
        pg->tcap = cap;
    }
    memcpy(pg->text + pg->tlen, text, len);
    pg->tlen += len;
}

/* The page's visible text into pg->text, as the HTML path sees it. */
static void bh_visible_text(bh_page *pg)
{
    fp_html *h = fp_html_new_sink(FP_HTML_ALL_TEXT, bh_gather, pg);
    if (h == NULL)
        return;
    fp_html_update(h, pg->data, pg->len);
    fp_html_final(h, NULL);
    fp_html_free(h);
}

static char *bh_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    *len = n;
    return b;
}

/* ---- The sax_empty path: html.c's callbacks, doing nothing but count ---- */

static void bh_on_start(void *ctx, const xmlChar *name, const xmlChar **atts)
{
    (void)name;
    (void)atts;
    (*(uint64_t *)ctx)++;
}

static void bh_on_end(void *ctx, const xmlChar *name)
{
    (void)name;
    (*(uint64_t *)ctx)++;
}

static void bh_on_text(void *ctx, const xmlChar *s, int len)
{
    (void)s;
    *(uint64_t *)ctx += (uint64_t)len;
}

/* The callbacks common/core/html.c registers (html_sax), each only counting. */
static htmlSAXHandler bh_sax_count = {
    .startElement = bh_on_start,
    .endElement = bh_on_end,
    .characters = bh_on_text,
    .cdataBlock = bh_on_text,
    .ignorableWhitespace = bh_on_text,
};

/* libxml2 alone: the page through the push parser with SAX handler sax (no
 * callbacks when NULL), in the blocks common/core/html.c uses. Returns the events
 * and text bytes counted, or -1 when the parser fails. */
static int64_t bh_parse_only(const char *data, size_t len, htmlSAXHandler *sax)
{
    static htmlSAXHandler none;     /* every callback NULL */
    uint64_t count = 0;
    htmlParserCtxtPtr c = htmlCreatePushParserCtxt(sax ? sax : &none, &count, NULL, 0, NULL,
                                                   XML_CHAR_ENCODING_NONE);
    if (c == NULL)
        return -1;
    htmlCtxtUseOptions(c, HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET |
                          HTML_PARSE_NODEFDTD);
    const size_t block = 64 * 1024;
    for (size_t off = 0; off < len; off += block) {
        size_t n = len - off < block ? len - off : block;
        htmlParseChunk(c, data + off, (int)n, 0);
    }
    htmlParseChunk(c, NULL, 0, 1);
    htmlFreeParserCtxt(c);
    return (int64_t)count;
}

static int bh_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The paths, in the order each run times them. */
enum bh_path {
    BH_HTML,            /* the HTML path of the default algorithm */
    BH_TEXT,            /* the default's text path on the same bytes */
    BH_PARSER,          /* libxml2's push parser, no callbacks */
    BH_SAX_EMPTY,       /* the parser with html.c's callbacks, counting only */
    BH_VISIBLE,         /* the default's text path on the page's visible text */
    BH_HTML_ALL,        /* the default's HTML path without extraction (FP_HTML_ALL_TEXT) */
    BH_NPATH
};

/* One pass of a path over n pages: the sum of their fingerprints (a checksum; the
 * parser paths: the events and text bytes they counted, none without callbacks); pages the HTML paths cannot read are counted in
 * *failed. */
static uint64_t bh_pass(enum bh_path path, const bh_page *pages, size_t n, size_t *failed)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t fp = 0;
        char err[200];
        switch (path) {
        case BH_HTML:
        case BH_HTML_ALL:
            if (fp_html_text(pages[i].data, pages[i].len, NULL,
                             path == BH_HTML_ALL ? FP_HTML_ALL_TEXT : 0, &fp, err, sizeof err))
                ++*failed;
            break;
        case BH_TEXT:
            fp = fp_text_p(pages[i].data, pages[i].len, NULL);
            break;
        case BH_VISIBLE:
            fp = fp_text_p(pages[i].text ? pages[i].text : "", pages[i].tlen, NULL);
            break;
        default:
            fp = (uint64_t)bh_parse_only(pages[i].data, pages[i].len,
                                         path == BH_SAX_EMPTY ? &bh_sax_count : NULL);
        }
        sum += fp;
    }
    return sum;
}

/* The median of n values (sorts a copy). */
static double bh_median(const double *v, unsigned n)
{
    double s[101];
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof s[0], bh_cmp);
    return s[n / 2];
}

int main(int argc, char **argv)
{
    unsigned runs = 5;
    const char *list = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = (unsigned)strtoul(argv[++i], NULL, 10);
            if (runs < 1 || runs > 101) {
                fprintf(stderr, "bench-html: --runs 1..101\n");
                return 2;
            }
        } else if (!list && argv[i][0] != '-') {
            list = argv[i];
        } else if (!list && strcmp(argv[i], "-") == 0) {
            list = "-";
        } else {
            fprintf(stderr, "usage: bench-html [--runs R] LIST\n");
            return 2;
        }
    }
    if (!list) {
        fprintf(stderr, "usage: bench-html [--runs R] LIST\n");
        return 2;
    }
    FILE *lf = strcmp(list, "-") == 0 ? stdin : fopen(list, "r");
    if (!lf) {
        fprintf(stderr, "bench-html: %s: %s\n", list, strerror(errno));
        return 2;
    }
    bh_page *pages = NULL;
    size_t np = 0, cap = 0, total = 0;
    char line[4096];
    while (fgets(line, sizeof line, lf)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0])
            continue;
        if (np == cap) {
            cap = cap ? 2 * cap : 256;
            bh_page *nps = realloc(pages, cap * sizeof *pages);
            if (!nps) {
                fprintf(stderr, "bench-html: out of memory\n");
                return 2;
            }
            pages = nps;
        }
        memset(&pages[np], 0, sizeof pages[np]);
        pages[np].data = bh_read(line, &pages[np].len);
        if (!pages[np].data) {
            fprintf(stderr, "bench-html: %s: cannot read\n", line);
            continue;
        }
        total += pages[np].len;
        bh_visible_text(&pages[np]);
        np++;
    }
    if (lf != stdin)
        fclose(lf);
    if (np == 0) {
        fprintf(stderr, "bench-html: no pages\n");
        return 2;
    }
    double mib = (double)total / 1048576.0;
    printf("# pages=%zu bytes=%zu runs=%u\n", np, total, runs);
    static const char *const names[BH_NPATH] = {
        [BH_HTML] = "html", [BH_TEXT] = "text", [BH_PARSER] = "parser_only",
        [BH_SAX_EMPTY] = "sax_empty", [BH_VISIBLE] = "visible_text",
        [BH_HTML_ALL] = "html_all_text" };
    /* Every run times each path in turn, so a busy moment of the machine falls on all
     * the paths alike; a ratio is the median of the runs' own ratios. Before its timed
     * pass a path runs untimed over the first MiB of pages, so that no path is timed
     * with the code and tables of the one before it in the caches. */
    static double wall[BH_NPATH][101], cpu[BH_NPATH][101];
    uint64_t first[BH_NPATH] = { 0 };
    size_t failed = 0, nwarm = 0;
    for (size_t w = 0; nwarm < np && w < 1048576; nwarm++)
        w += pages[nwarm].len;
    for (unsigned r = 0; r < runs; r++) {
        for (enum bh_path path = 0; path < BH_NPATH; path++) {
            size_t ignored = 0;
            (void)bh_pass(path, pages, nwarm, &ignored);
            double w0 = bench_clock(CLOCK_MONOTONIC), c0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
            size_t bad = 0;
            uint64_t sum = bh_pass(path, pages, np, &bad);
            wall[path][r] = bench_clock(CLOCK_MONOTONIC) - w0;
            cpu[path][r] = bench_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
            if (r > 0 && sum != first[path]) {
                fprintf(stderr, "bench-html: %s gave different results across runs\n", names[path]);
                return 1;
            }
            first[path] = sum;
            if (r == 0 && path == BH_HTML)
                failed = bad;
        }
    }
    for (enum bh_path path = 0; path < BH_NPATH; path++) {
        double w = bh_median(wall[path], runs), c = bh_median(cpu[path], runs);
        printf("bench=html path=%s pages=%zu mib=%.1f mib_s=%.1f median_s=%.4f cpu_mib_s=%.1f "
               "median_cpu_s=%.4f checksum=%016llx\n", names[path], np, mib, mib / w, w, mib / c,
               c, (unsigned long long)first[path]);
    }
    /* the ratios: median over the runs of (time of path b) / (time of path a); with
     * floor set, a is the floor of an HTML path: sax_empty plus the text path a on the
     * visible text */
    static const struct { const char *name; enum bh_path a, b; int floor; } ratio[] = {
        { "html_vs_text_cpu", BH_HTML, BH_TEXT, 0 },
        { "html_vs_parser_only_cpu", BH_HTML, BH_PARSER, 0 },
        { "sax_empty_vs_parser_only_cpu", BH_SAX_EMPTY, BH_PARSER, 0 },
        { "floor_vs_parser_only_cpu", BH_VISIBLE, BH_PARSER, 1 },
        { "html_all_text_vs_parser_only_cpu", BH_HTML_ALL, BH_PARSER, 0 },
        { "html_vs_html_all_text_cpu", BH_HTML, BH_HTML_ALL, 0 },
    };
    printf("bench=html");
    for (size_t k = 0; k < sizeof ratio / sizeof ratio[0]; k++) {
        double q[101];
        for (unsigned r = 0; r < runs; r++) {
            enum bh_path a = ratio[k].a;
            double ta = ratio[k].floor ? cpu[BH_SAX_EMPTY][r] + cpu[a][r] : cpu[a][r];
            q[r] = cpu[ratio[k].b][r] / ta;
        }
        printf(" %s=%.2f", ratio[k].name, bh_median(q, runs));
    }
    printf(" unreadable_pages=%zu\n", failed);
    for (size_t i = 0; i < np; i++) {
        free(pages[i].data);
        free(pages[i].text);
    }
    free(pages);
    return 0;
}
