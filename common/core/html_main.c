/* html_main.c: main-content extraction for HTML fingerprints (algorithm v3): which
 * parts of a page are its own text and which the site's template. Streaming, bounded
 * memory (struct hmain), no tree; html.c feeds it elements and text. The rules are in
 * docs/fingerprint.md "Main content (v3)"; each one is a table or a constant here. */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "html_main.h"

/* Counters an open element raised (hmain.bits). */
enum { HM_DROP = 1, HM_MAIN = 2, HM_LINK = 4, HM_HEAD = 8 };

/* ---- Element rules ---- */

/* Site furniture: the element and everything in it is not the page's text. */
static const char *const hm_drop_tags[] = {
    "nav", "aside", "form", "menu", "dialog", "button", "select", "textarea", NULL,
};

/* Furniture outside an article, the article's own header or footer inside one. */
static const char *const hm_box_tags[] = { "header", "footer", NULL };

/* The page's main content (when it says so). */
static const char *const hm_main_tags[] = { "main", "article", NULL };

/* Headings (the <title> too, when it is text): kept before kept text. */
static const char *const hm_heading_tags[] = {
    "h1", "h2", "h3", "h4", "h5", "h6", "title", NULL,
};

/* ARIA roles (role="...") of furniture, and of main content. */
static const char *const hm_drop_roles[] = {
    "navigation", "banner", "contentinfo", "complementary", "search", "dialog",
    "alertdialog", "menu", "menubar", NULL,
};
static const char *const hm_main_roles[] = { "main", "article", NULL };

/* Words of class and id values that name furniture (compared whole, after splitting
 * the value at every character other than a letter or digit, in lower case). */
static const char *const hm_drop_names[] = {
    "nav", "navbar", "navigation", "menu", "sidebar", "footer", "breadcrumb",
    "breadcrumbs", "cookie", "cookies", "consent", "banner", "comments", "comment",
    "share", "sharing", "social", "related", "newsletter", "subscribe", "widget",
    "widgets", "advert", "ads", "sponsor", "promo", "masthead", "skip", NULL,
};

static int hm_in(const char *const *list, const char *s, size_t n)
{
    for (size_t i = 0; list[i]; i++)
        if (list[i][0] == s[0] && strlen(list[i]) == n && memcmp(list[i], s, n) == 0)
            return 1;
    return 0;
}

static int hm_is(const char *const *list, const char *s)
{
    return hm_in(list, s, strlen(s));
}

static int hm_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* FNV-1a of a word (hmain.names' slots). */
static unsigned hm_word_hash(const char *w, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)w[i]) * 16777619u;
    return h % HMAIN_NAMES;
}

_Static_assert(sizeof hm_drop_names / sizeof hm_drop_names[0] <= HMAIN_NAMES / 2,
               "hmain.names keeps a free slot in two");

/* Fills m->names: the words of hm_drop_names hashed into an open-addressed table. */
static void hm_names_index(hmain *m)
{
    memset(m->names, 0, sizeof m->names);
    for (size_t i = 0; hm_drop_names[i]; i++) {
        unsigned j = hm_word_hash(hm_drop_names[i], strlen(hm_drop_names[i]));
        while (m->names[j])
            j = (j + 1) % HMAIN_NAMES;
        m->names[j] = (uint8_t)(i + 1);
    }
}

/* Whether w[0..n) is a word of hm_drop_names (through m->names). */
static int hm_names_has(const hmain *m, const char *w, size_t n)
{
    for (unsigned j = hm_word_hash(w, n); m->names[j]; j = (j + 1) % HMAIN_NAMES) {
        const char *d = hm_drop_names[m->names[j] - 1];
        if (strncmp(d, w, n) == 0 && d[n] == '\0')
            return 1;
    }
    return 0;
}

/* Whether a class or id value has a word of hm_drop_names (ASCII, any case). */
static int hm_names_furniture(const hmain *m, const char *v)
{
    char w[24];
    while (*v) {
        while (*v && !hm_alnum((unsigned char)*v))
            v++;
        size_t n = 0;
        for (; hm_alnum((unsigned char)*v); v++)
            if (n < sizeof w)
                w[n++] = (char)(*v | (*v >= 'A' && *v <= 'Z' ? 0x20 : 0));
        if (n > 0 && n < sizeof w && hm_names_has(m, w, n))
            return 1;
    }
    return 0;
}

static int hm_lower_eq(const char *v, const char *const *list)
{
    char w[24];
    size_t n = 0;
    for (; *v && n < sizeof w; v++)
        w[n++] = (char)(*v >= 'A' && *v <= 'Z' ? *v | 0x20 : *v);
    return n > 0 && n < sizeof w && !*v && hm_in(list, w, n);
}

/* What the attributes say: HM_DROP (hidden, a furniture role, class or id), HM_MAIN
 * (a main role), or 0. */
static unsigned hm_attr_rules(const hmain *m, const char *const *atts)
{
    unsigned r = 0;
    for (size_t i = 0; atts && atts[i]; i += 2) {
        const char *k = atts[i], *v = atts[i + 1] ? atts[i + 1] : "";
        switch (k[0]) {     /* most attributes (href, title, ...) are none of these */
        case 'h':
            if (strcmp(k, "hidden") == 0)
                return HM_DROP;
            break;
        case 'a':
            if (strcmp(k, "aria-hidden") == 0 && strcmp(v, "true") == 0)
                return HM_DROP;
            break;
        case 'r':
            if (strcmp(k, "role") != 0)
                break;
            if (hm_lower_eq(v, hm_drop_roles))
                return HM_DROP;
            if (hm_lower_eq(v, hm_main_roles))
                r |= HM_MAIN;
            break;
        case 'c':
        case 'i':
            if ((strcmp(k, "class") == 0 || strcmp(k, "id") == 0) && hm_names_furniture(m, v))
                return HM_DROP;
            break;
        default:
            break;
        }
    }
    return r;
}

/* What an element name is for the rules (hm_drop_tags, ...; HMK_ROOT: body, html). */
enum { HMK_OTHER, HMK_DROP, HMK_BOX, HMK_MAIN, HMK_ROOT, HMK_HEADING };

static unsigned hm_kind_of(const char *name)
{
    if (hm_is(hm_drop_tags, name))
        return HMK_DROP;
    if (hm_is(hm_box_tags, name))
        return HMK_BOX;
    if (hm_is(hm_main_tags, name))
        return HMK_MAIN;
    if (strcmp(name, "body") == 0 || strcmp(name, "html") == 0)
        return HMK_ROOT;
    return hm_is(hm_heading_tags, name) ? HMK_HEADING : HMK_OTHER;
}

/* hm_kind_of(name), remembered per name pointer (m->kname). */
static unsigned hm_kind(hmain *m, const char *name)
{
    size_t i = hmain_name_slot(name);
    if (m->kname[i] != name) {
        m->kind[i] = (uint8_t)hm_kind_of(name);
        m->kname[i] = name;
    }
    return m->kind[i];
}

/* The counters an element raises, from its kind (hm_kind), attributes and where it
 * is. */
static unsigned hm_rules(const hmain *m, unsigned kind, const char *const *atts)
{
    switch (kind) {
    case HMK_DROP:
        return HM_DROP;
    case HMK_BOX:
        return m->main ? 0 : HM_DROP;
    case HMK_MAIN:
        return HM_MAIN;     /* a class never drops an article */
    case HMK_ROOT:
        return hm_attr_rules(m, atts) & HM_MAIN;   /* nor the body */
    case HMK_HEADING:
        return hm_attr_rules(m, atts) | HM_HEAD;
    default:
        return hm_attr_rules(m, atts);
    }
}

/* ---- Letters ---- */

#if defined(__SSE2__)
/* Letters, digits and non-ASCII lead bytes (>= 0xC0) among the 16 bytes at p, as a
 * mask of the signed bytes: ASCII is 0..127, so the digit and letter ranges compare
 * exactly (v | 0x20 lower-cases A-Z, keeps a-z and 0-9, maps no other byte into a-z),
 * and 0xC0..0xFF are -64..-1. */
static unsigned hm_letters16(const void *p)
{
    const __m128i x20 = _mm_set1_epi8(0x20), zero = _mm_setzero_si128();
    const __m128i d_lo = _mm_set1_epi8('0' - 1), d_hi = _mm_set1_epi8('9' + 1);
    const __m128i a_lo = _mm_set1_epi8('a' - 1), a_hi = _mm_set1_epi8('z' + 1);
    const __m128i lead = _mm_set1_epi8((char)0xBF);
    __m128i v = _mm_loadu_si128((const __m128i *)p), l = _mm_or_si128(v, x20);
    __m128i d = _mm_and_si128(_mm_cmpgt_epi8(v, d_lo), _mm_cmplt_epi8(v, d_hi));
    __m128i a = _mm_and_si128(_mm_cmpgt_epi8(l, a_lo), _mm_cmplt_epi8(l, a_hi));
    __m128i u = _mm_and_si128(_mm_cmpgt_epi8(v, lead), _mm_cmplt_epi8(v, zero));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(d, a), u));
}
#endif

/* Letters, digits and non-ASCII characters (their lead bytes) in s[0..n); with over
 * set, the 15 bytes after s[n - 1] may be read (and are not counted). */
static uint64_t hm_letters(const char *s, size_t n, int over)
{
    uint64_t k = 0;
    size_t i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16)
        k += (unsigned)__builtin_popcount(hm_letters16(s + i));
    if (i < n && over) {
        k += (unsigned)__builtin_popcount(hm_letters16(s + i) & ((1u << (n - i)) - 1));
    } else if (i < n) {     /* the last bytes, zero-padded (0 is no letter) */
        uint8_t t[16] = {0};
        memcpy(t, s + i, n - i);
        k += (unsigned)__builtin_popcount(hm_letters16(t));
    }
#else
    (void)over;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        k += hm_alnum(c) || c >= 0xC0;
    }
#endif
    return k;
}

/* Counts the letters of blk[] not counted yet into m->letters (they are counted a
 * whole block at a time, not per piece of text: libxml2's pieces are short) and
 * returns them. */
static uint64_t hm_count(hmain *m)
{
    uint64_t k = hm_letters(m->blk + m->counted, m->nblk - m->counted, 1);
    m->letters += k;
    m->counted = m->nblk;
    return k;
}

/* ---- Blocks ---- */

static unsigned hm_tiers(int main)
{
    return HMAIN_CONTENT | (main ? HMAIN_MAIN : 0);
}

/* Hands over kept text of block seq (how: HMAIN_WHOLE, HMAIN_PIECE or HMAIN_END) and
 * counts letters of kept long text. */
static void hm_out(hmain *m, int main, uint64_t seq, const char *s, size_t n,
                   uint64_t letters, unsigned how)
{
    m->emit(m->arg, hm_tiers(main), seq, s, n, how);
    m->good_content += letters;
    if (main)
        m->good_main += letters;
}

/* Forgets the held blocks. */
static void hm_discard(hmain *m)
{
    m->npb = 0;
    m->npend = 0;
}

/* Whether a provisional block is held (after it only headings can be). */
static int hm_last_provisional(const hmain *m)
{
    for (unsigned i = m->npb; i > 0; i--)
        if (m->pb[i - 1].kind != HMAIN_HELD_HEADING)
            return m->pb[i - 1].kind == HMAIN_HELD_PROVISIONAL;
    return 0;
}

/* A kept block follows the held ones: hands over those to keep (a provisional block;
 * a short block after a kept one, or right before a kept one; a heading) and forgets
 * them all. */
static void hm_flush(hmain *m)
{
    int ctx = m->prev_good;
    for (unsigned i = 0; i < m->npb; i++) {
        const hmain_pend *p = &m->pb[i];
        int next_kept = i + 1 == m->npb || m->pb[i + 1].kind == HMAIN_HELD_PROVISIONAL;
        if (p->kind == HMAIN_HELD_PROVISIONAL) {
            hm_out(m, p->main, p->seq, m->pend + p->off, p->len, p->letters, HMAIN_WHOLE);
            ctx = 1;
        } else if (ctx || next_kept || p->kind == HMAIN_HELD_HEADING) {
            hm_out(m, p->main, p->seq, m->pend + p->off, p->len, 0, HMAIN_WHOLE);
        }
    }
    hm_discard(m);
}

/* Holds the current block (kind HMAIN_HELD_*) until a later block decides: 0, or -1
 * when it does not fit. */
static int hm_hold(hmain *m, unsigned kind)
{
    if (m->npb == HMAIN_NPEND || m->npend + m->nblk > HMAIN_PENDING)
        hm_discard(m);      /* more short blocks in a row than an article has: none kept */
    if (m->nblk > HMAIN_PENDING)
        return -1;
    hmain_pend *p = &m->pb[m->npb++];
    p->seq = m->seq;
    p->off = (uint32_t)m->npend;
    p->len = (uint32_t)m->nblk;
    p->letters = (uint32_t)m->letters;
    p->kind = (uint8_t)kind;
    p->main = (uint8_t)m->blk_main;
    memcpy(m->pend + m->npend, m->blk, m->nblk);
    m->npend += m->nblk;
    if (kind != HMAIN_HELD_PROVISIONAL)
        m->links_run = 0;
    return 0;
}

/* The current block is kept: the held blocks before it by hm_flush's rules, then its
 * text so far (how: HMAIN_WHOLE at its end, HMAIN_PIECE when more follows). */
static void hm_keep(hmain *m, unsigned how, uint64_t letters)
{
    hm_flush(m);
    hm_out(m, m->blk_main, m->seq, m->blk, m->nblk, letters, how);
    m->prev_good = 1;
    m->links_run = 0;
}

static int hm_mostly_links(const hmain *m)
{
    return m->lletters * 2 > m->letters;
}

/* The block so far outgrew its buffer: judged now, the rest follows that verdict. */
static void hm_decide_early(hmain *m)
{
    if (m->blk_drop || hm_mostly_links(m)) {
        m->streaming = -1;
    } else {
        hm_keep(m, HMAIN_PIECE, 0);
        m->streaming = 1;
    }
    m->nblk = m->counted = 0;
}

/* The current block ends (an element boundary): judged, then handed over, held or
 * dropped. */
static void hm_block_end(hmain *m)
{
    if (!m->blk_drop)
        hm_count(m);
    if (m->streaming > 0) {
        hm_out(m, m->blk_main, m->seq, NULL, 0, m->letters, HMAIN_END);
    } else if (m->blk_drop || m->letters == 0) {
        /* furniture is as if absent (a share bar between a title and its text); a
         * block of spaces and punctuation is no block */
    } else if (m->streaming < 0 || hm_mostly_links(m)) {
        hm_discard(m);      /* link lists around held blocks: they are furniture too */
        m->prev_good = 0;
        m->links_run += m->letters;
    } else if (m->letters < HMAIN_SHORT) {
        if (hm_last_provisional(m) && !m->blk_heading)
            hm_discard(m);  /* text after link text, then a short line: furniture */
        hm_hold(m, m->blk_heading ? HMAIN_HELD_HEADING : HMAIN_HELD_SHORT);
    } else if (m->links_run < HMAIN_LINKRUN || m->blk_main || m->letters >= HMAIN_LONG ||
               hm_last_provisional(m) ||
               hm_hold(m, HMAIN_HELD_PROVISIONAL) != 0) {
        hm_keep(m, HMAIN_WHOLE, m->letters);
    }
    m->nblk = m->counted = 0;
    m->letters = m->lletters = 0;
    m->streaming = 0;
}

/* A new block starts with the current element state. */
static void hm_block_begin(hmain *m)
{
    m->seq++;
    m->blk_drop = m->drop > 0;
    m->blk_heading = m->heading > 0;
    m->blk_main = m->main > 0;
}

/* ---- Interface ---- */

void hmain_init(hmain *m, hmain_emit_fn emit, void *arg)
{
    m->emit = emit;
    m->arg = arg;
    m->gather = 0;
    hm_names_index(m);
    m->depth = m->over = 0;
    m->drop = m->main = m->link = m->heading = 0;
    memset(m->kname, 0, sizeof m->kname);
    m->seq = 0;
    m->nblk = m->counted = 0;
    m->letters = m->lletters = 0;
    m->blk_drop = m->blk_heading = m->blk_main = m->streaming = 0;
    hm_discard(m);
    m->prev_good = 0;
    m->links_run = 0;
    m->good_content = m->good_main = 0;
}

static void hm_pop_counters(hmain *m, unsigned b)
{
    m->drop -= (b & HM_DROP) != 0;
    m->main -= (b & HM_MAIN) != 0;
    m->link -= (b & HM_LINK) != 0;
    m->heading -= (b & HM_HEAD) != 0;
}

void hmain_restart(hmain *m)
{
    hm_block_end(m);
    while (m->depth > 0)
        hm_pop_counters(m, m->bits[--m->depth]);
    m->over = 0;
    memset(m->kname, 0, sizeof m->kname);   /* the next parser's names are new pointers */
    hm_block_begin(m);
}

static void hm_push(hmain *m, const char *name, unsigned b)
{
    if (m->depth == HMAIN_DEPTH) {
        m->over++;
        return;
    }
    m->name[m->depth] = name;
    m->bits[m->depth++] = (uint8_t)b;
    m->drop += (b & HM_DROP) != 0;
    m->main += (b & HM_MAIN) != 0;
    m->link += (b & HM_LINK) != 0;
    m->heading += (b & HM_HEAD) != 0;
}

void hmain_start(hmain *m, const char *name, int is_inline, const char *const *atts)
{
    if (is_inline) {
        if (name[0] == 'a' && name[1] == '\0')
            hm_push(m, name, HM_LINK);
        return;
    }
    hm_block_end(m);
    hm_push(m, name, hm_rules(m, hm_kind(m, name), atts));
    hm_block_begin(m);
}

/* Closes the innermost open element called name (and any left open inside it). */
static void hm_pop(hmain *m, const char *name)
{
    if (m->over > 0) {
        m->over--;
        return;
    }
    unsigned i = m->depth;
    while (i > 0 && m->name[i - 1] != name && strcmp(m->name[i - 1], name) != 0)
        i--;
    if (i == 0)
        return;             /* not open (a stray end tag) */
    while (m->depth >= i)
        hm_pop_counters(m, m->bits[--m->depth]);
}

void hmain_end(hmain *m, const char *name, int is_inline)
{
    if (is_inline) {
        if (name[0] == 'a' && name[1] == '\0')
            hm_pop(m, name);
        return;
    }
    hm_block_end(m);
    hm_pop(m, name);
    hm_block_begin(m);
}

/* hmain_text's text that does not fit in blk[] (the block is judged early), or comes
 * after that, or (not gathering) belongs to a dropped block. Its letters are counted
 * at once, all of them before the early verdict (the text of the block so far). */
static void hm_text_over(hmain *m, const char *s, size_t n)
{
    uint64_t k = hm_letters(s, n, 0);
    m->letters += k;
    if (m->link)
        m->lletters += k;
    if (m->streaming == 0 && (m->gather || !m->blk_drop)) {
        hm_count(m);
        size_t c = HMAIN_BLOCK - m->nblk;     /* n >= c: blk[] fills up */
        memcpy(m->blk + m->nblk, s, c);
        m->nblk = m->counted = HMAIN_BLOCK;
        s += c;
        n -= c;
        if (m->gather)
            m->emit(m->arg, HMAIN_ALL, m->seq, m->blk, HMAIN_BLOCK, HMAIN_PIECE);
        hm_decide_early(m);
    }
    if (n == 0)
        return;
    if (m->gather)
        m->emit(m->arg, HMAIN_ALL, m->seq, s, n, HMAIN_PIECE);
    if (m->streaming > 0)
        m->emit(m->arg, hm_tiers(m->blk_main), m->seq, s, n, HMAIN_PIECE);
}

/* Text of a block that fits in blk[] is counted when the block ends (hm_count), but
 * link text at once (lletters). A dropped block's letters count for nothing. */
void hmain_text(hmain *m, const char *s, size_t n)
{
    if (m->streaming == 0 && (m->gather || !m->blk_drop) && n < HMAIN_BLOCK - m->nblk) {
        memcpy(m->blk + m->nblk, s, n);
        if (m->link) {
            hm_count(m);
            m->nblk += n;
            m->lletters += hm_count(m);
        } else {
            m->nblk += n;
        }
        return;
    }
    hm_text_over(m, s, n);
}

int hmain_may_keep(hmain *m)
{
    if (m->streaming != 0 || m->blk_drop)
        return 0;
    hm_count(m);
    return m->letters > 0 && !hm_mostly_links(m);
}

unsigned hmain_finish(hmain *m)
{
    hm_block_end(m);
    if (hm_last_provisional(m) && m->good_content == 0)
        hm_flush(m);        /* the page's only text after link text: kept (else it is
                               a footer line) */
    unsigned tier = m->good_main > 0 && m->good_main * 5 >= m->good_content ? HMAIN_MAIN
                    : m->good_content > 0                                   ? HMAIN_CONTENT
                                                                            : HMAIN_ALL;
    int gather = m->gather;
    hmain_init(m, m->emit, m->arg);
    m->gather = gather;
    return tier;
}
