/* html_article.c: the article of a page, from the tree of html_tree.c (algorithm v5).
 * Four passes, from strict to lenient, each: mark what is out of the search (site
 * furniture by tag, class, id or role), sum letters, link letters and commas over
 * subtrees, score the containers of paragraphs, pick the best container and the
 * siblings that belong with it, cut furniture out of it; the first pass whose article
 * has HART_MIN_LETTERS letters wins, else the longest. docs/fingerprint.md
 * "Algorithm v5" has the rules and where they come from (readability's scoring,
 * trafilatura's known containers and pruned blocks). Built with -DHART_DEBUG, each
 * pass prints its candidates, its article's roots and its cuts on stderr. */
#include <stdlib.h>
#include <string.h>
#ifdef HART_DEBUG
#include <stdio.h>
#endif

#include "html_article.h"

/* Passes: what each one does. */
enum {
    HA_STRIP = 1,             /* unlikely candidates and furniture tags are out */
    HA_WEIGHT = 2,            /* class and id weights count */
    HA_CLEAN = 4,             /* containers that look like furniture are cut */
};

/* Per node, per pass. */
typedef struct ha_node {
    uint32_t letters, links, commas;  /* over the subtree (what is not out) */
    uint32_t own, owncommas;          /* text whose nearest block element this is */
    uint32_t np, nimg, nli, ninput, nembed;   /* elements of a kind in the subtree */
    float score;
    uint8_t out, cut, inlink, scored, keep;
} ha_node;

typedef struct ha {
    const htree *t;
    ha_node *s;
    uint32_t *raw;            /* letters of each subtree, nothing left out */
    uint8_t *body;            /* the subtree holds an element naming the article's body
                                 (itemprop=articleBody, its class names, <main>) */
    uint32_t core;            /* the best-scored container, before moving up: what the
                                 cuts never touch */
    uint64_t page;            /* letters of the page */
    unsigned pass;
} ha;

/* ---- Text measures ---- */

static int ha_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Letters (characters other than white space) and commas of a UTF-8 run. */
static void ha_count(const char *s, size_t n, uint32_t *letters, uint32_t *commas)
{
    uint32_t l = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        if ((b & 0xC0) != 0x80 && !ha_space(b) && !(b == 0xC2 && i + 1 < n &&
                                                     (unsigned char)s[i + 1] == 0xA0))
            l++;
        if (b == ',')
            c++;
        else if (b == 0xEF && i + 2 < n && (unsigned char)s[i + 1] == 0xBC &&
                 (unsigned char)s[i + 2] == 0x8C)
            c++;                /* U+FF0C fullwidth comma */
        else if (b == 0xD8 && i + 1 < n && (unsigned char)s[i + 1] == 0x8C)
            c++;                /* U+060C Arabic comma */
        else if (b == 0xE3 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
                 (unsigned char)s[i + 2] == 0x81)
            c++;                /* U+3001 ideographic comma */
    }
    *letters = l;
    *commas = c;
}

static int ha_is_elem(const htree_node *x)
{
    return x->kind != HT_TEXT;
}

static float ha_link_density(const ha_node *s)
{
    return s->letters ? (float)s->links / (float)s->letters : 0.0f;
}

/* ---- One pass ---- */

/* Whether node i is out of the search in this pass (its parent's verdict aside):
 * readers' comments and ARIA furniture roles in every pass, the rest of what names
 * or tags say only in the strict pass. */
static int ha_out_self(const ha *a, uint32_t i)
{
    const htree_node *x = &a->t->node[i];
    if (x->kind == HT_TEXT || x->kind == HT_BODY || (x->flags & HTF_ARTICLE))
        return 0;
    /* a furniture element or role holding three quarters of the page's text: markup
       gone wrong (a header never closed), not furniture */
    int most = 4 * (uint64_t)a->raw[i] > 3 * a->page;
    if ((x->flags & HTF_NEVER) && !((x->flags & HTF_ROLE) && most))
        return 1;
    if (!(a->pass & HA_STRIP))
        return 0;
    switch (x->kind) {
    case HT_NAV: case HT_ASIDE: case HT_FOOTER: case HT_HEADER: case HT_MENU:
        return !most;
    case HT_A:
        return 0;
    default:            /* a wrapper named for its layout ("with-sidebar") holding the
                           article's body is not furniture */
        return (x->flags & HTF_UNLIKELY) && !(x->flags & HTF_ARTICLE) && !a->body[i];
    }
}

/* Letters of every subtree and of the page, nothing left out (a->raw, a->page), and
 * which subtrees hold the article's body by name (a->body). */
static void ha_raw(ha *a)
{
    const htree *t = a->t;
    for (uint32_t i = t->n; i-- > 0;) {
        const htree_node *x = &t->node[i];
        if (x->kind == HT_TEXT) {
            uint32_t commas;
            ha_count(t->text + x->off, x->len, &a->raw[i], &commas);
        }
        if ((x->flags & HTF_BODYHINT) || x->kind == HT_MAIN)
            a->body[i] = 1;
        if (x->parent != i) {
            a->raw[x->parent] += a->raw[i];
            a->body[x->parent] |= a->body[i];
        } else {
            a->page += a->raw[i];
        }
    }
}

/* Marks what is out, and sums the text measures over subtrees. */
static void ha_measure(ha *a)
{
    const htree *t = a->t;
    ha_node *s = a->s;
    memset(s, 0, t->n * sizeof *s);
    for (uint32_t i = 0; i < t->n; i++) {
        const htree_node *x = &t->node[i];
        uint32_t p = x->parent;
        int root = p == i;
        s[i].out = (uint8_t)((!root && s[p].out) || ha_out_self(a, i));
        s[i].inlink = (uint8_t)((!root && s[p].inlink) || x->kind == HT_A);
    }
    for (uint32_t i = t->n; i-- > 0;) {
        const htree_node *x = &t->node[i];
        if (s[i].out)
            continue;
        if (x->kind == HT_TEXT) {
            ha_count(t->text + x->off, x->len, &s[i].letters, &s[i].commas);
            if (s[i].inlink)
                s[i].links = s[i].letters;
        } else {
            s[i].np += x->kind == HT_P;
            s[i].nimg += x->kind == HT_IMG;
            s[i].nli += x->kind == HT_LI;
            s[i].ninput += x->kind == HT_INPUT;
            s[i].nembed += x->kind == HT_EMBED;
        }
        uint32_t p = x->parent;
        if (p == i)
            continue;
        s[p].letters += s[i].letters;
        s[p].links += s[i].links;
        s[p].commas += s[i].commas;
        s[p].np += s[i].np;
        s[p].nimg += s[i].nimg;
        s[p].nli += s[i].nli;
        s[p].ninput += s[i].ninput;
        s[p].nembed += s[i].nembed;
        /* text and inline elements count for the nearest block element */
        if (x->flags & HTF_INLINE) {
            if (x->kind == HT_TEXT) {
                s[i].own = s[i].letters;
                s[i].owncommas = s[i].commas;
            }
            s[p].own += s[i].own;
            s[p].owncommas += s[i].owncommas;
        }
    }
}

/* A container's score before its paragraphs: by kind, and its names' weight. */
static float ha_base(const ha *a, uint32_t i)
{
    const htree_node *x = &a->t->node[i];
    float b = 0;
    switch (x->kind) {
    case HT_DIV: b = 5; break;
    case HT_PRE: case HT_TD: case HT_BLOCKQUOTE: b = 3; break;
    case HT_ADDRESS: case HT_OL: case HT_UL: case HT_DL: case HT_DD: case HT_DT:
    case HT_LI: case HT_FORM: b = -3; break;
    case HT_H1: case HT_H: case HT_TH: b = -5; break;
    default: break;
    }
    if (a->pass & HA_WEIGHT) {
        b += (float)x->weight;
        if (x->flags & HTF_BODYHINT)
            b += 25;
    }
    return b;
}

/* Whether an element's own text is a paragraph: list items, table headers, captions
 * and the like are not (their containers are lists, tables, figures). */
static int ha_paragraph(const htree_node *x)
{
    if (x->flags & HTF_INLINE)
        return 0;
    switch (x->kind) {
    case HT_P: case HT_PRE: case HT_TD: case HT_H: case HT_DIV: case HT_SECTION:
    case HT_ARTICLE: case HT_MAIN: case HT_OTHER: case HT_BLOCKQUOTE: case HT_BODY:
        return 1;
    default:
        return 0;
    }
}

/* Scores paragraphs into their containers: each block element with 25 letters or
 * more of its own gives 1 + commas + one per 100 letters (3 at most) to its parent,
 * half to its grandparent, and a third of the level to the next three. */
static void ha_score(ha *a)
{
    const htree *t = a->t;
    ha_node *s = a->s;
    for (uint32_t i = 0; i < t->n; i++) {
        const htree_node *x = &t->node[i];
        if (s[i].out || !ha_paragraph(x) || s[i].own < 25)
            continue;
        float c = 1.0f + (float)s[i].owncommas + (float)(s[i].own / 100 < 3 ? s[i].own / 100 : 3);
        uint32_t e = i;
        for (unsigned level = 0; level < 5; level++) {
            uint32_t p = t->node[e].parent;
            if (p == e)
                break;
            e = p;
            if (!s[e].scored) {
                s[e].score = ha_base(a, e);
                s[e].scored = 1;
            }
            s[e].score += level == 0 ? c : level == 1 ? c / 2 : c / (float)(level * 3);
        }
    }
    for (uint32_t i = 0; i < t->n; i++)
        if (s[i].scored)
            s[i].score *= 1.0f - ha_link_density(&s[i]);
}

static int ha_is_ancestor(const htree *t, uint32_t anc, uint32_t i)
{
    return anc <= i && i < t->node[anc].end;
}

static int ha_is_body(const htree *t, uint32_t i)
{
    return t->node[i].kind == HT_BODY || t->node[i].parent == i;
}

/* Element children of p that are not out. */
static unsigned ha_children(const ha *a, uint32_t p)
{
    unsigned k = 0;
    for (uint32_t c = p + 1; c < a->t->node[p].end; c = a->t->node[c].end)
        if (ha_is_elem(&a->t->node[c]) && !a->s[c].out)
            k++;
    return k;
}

#define HA_TOP 5

/* The best container (readability's choice: the top score, moved up to an ancestor
 * the next best share, or while the score rises going up, or while it is an only
 * child). UINT32_MAX when nothing scored. */
static uint32_t ha_top(ha *a)
{
    const htree *t = a->t;
    ha_node *s = a->s;
    uint32_t top[HA_TOP];
    unsigned ntop = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!s[i].scored || s[i].out)
            continue;
        unsigned k = ntop < HA_TOP ? ntop++ : HA_TOP;
        while (k > 0 && s[top[k - 1]].score < s[i].score) {
            if (k < HA_TOP)
                top[k] = top[k - 1];
            k--;
        }
        if (k < HA_TOP)
            top[k] = i;
    }
#ifdef HART_DEBUG
    for (unsigned k = 0; k < ntop; k++)
        fprintf(stderr, "pass %u top %u: %u kind %d score %.1f letters %u\n", a->pass, k,
                top[k], t->node[top[k]].kind, s[top[k]].score, s[top[k]].letters);
#endif
    if (ntop == 0 || s[top[0]].score <= 0)
        return UINT32_MAX;
    uint32_t best = top[0];
    a->core = best;
    /* an ancestor that three of the near-best candidates share */
    unsigned nalt = 0;
    for (unsigned k = 1; k < ntop; k++)
        nalt += s[top[k]].score >= 0.75f * s[best].score;
    if (nalt >= 3) {
        for (uint32_t p = t->node[best].parent; !ha_is_body(t, p); p = t->node[p].parent) {
            unsigned in = 0;
            for (unsigned k = 1; k < ntop; k++)
                in += s[top[k]].score >= 0.75f * s[best].score && ha_is_ancestor(t, p, top[k]);
            if (in >= 3) {
                best = p;
                break;
            }
        }
    }
    if (!s[best].scored) {
        s[best].score = ha_base(a, best);
        s[best].scored = 1;
    }
    /* the score rising on the way up: more content lurks around */
    float last = s[best].score, threshold = last / 3;
    for (uint32_t p = t->node[best].parent; !ha_is_body(t, p); p = t->node[p].parent) {
        if (!s[p].scored)
            continue;
        if (s[p].score < threshold)
            break;
        if (s[p].score > last) {
            best = p;
            break;
        }
        last = s[p].score;
    }
    while (!ha_is_body(t, t->node[best].parent) && ha_children(a, t->node[best].parent) == 1)
        best = t->node[best].parent;
    return best;
}

/* Whether the text of node i ends a sentence somewhere (". " or a final "."). */
static int ha_has_sentence(const ha *a, uint32_t i)
{
    const htree *t = a->t;
    for (uint32_t j = i; j < t->node[i].end; j++) {
        const htree_node *x = &t->node[j];
        if (x->kind != HT_TEXT)
            continue;
        const char *p = t->text + x->off;
        for (uint32_t k = 0; k < x->len; k++)
            if (p[k] == '.' && (k + 1 == x->len || p[k + 1] == ' '))
                return 1;
    }
    return 0;
}

/* Whether two elements have the same (non-empty) class attribute. */
static int ha_same_names(const htree_node *x, const htree_node *y)
{
    return x->cls && x->cls == y->cls;
}

/* A sibling's score for joining the article (readability compares only siblings that
 * scored, i.e. hold paragraphs within five levels): its own score, or the best score
 * of a container inside it when that is higher, since a paragraph gives its great-
 * grandparent a sixth of what it gives its parent and a sibling three or four levels
 * above a section of the article scores a fraction of that section. Only for a
 * sibling that scored. */
static float ha_sibling_score(const ha *a, uint32_t c)
{
    const ha_node *s = a->s;
    float best = s[c].score;
    for (uint32_t j = c + 1; j < a->t->node[c].end; j++)
        if (s[j].scored && !s[j].out && s[j].score > best)
            best = s[j].score;
    return best;
}

/* Marks the article's roots (keep): the best container and the siblings that belong
 * with it. */
static void ha_siblings(ha *a, uint32_t best)
{
    const htree *t = a->t;
    ha_node *s = a->s;
    uint32_t p = t->node[best].parent;
    if (p == best) {
        s[best].keep = 1;
        return;
    }
    float threshold = s[best].score * 0.2f > 10 ? s[best].score * 0.2f : 10;
    for (uint32_t c = p + 1; c < t->node[p].end; c = t->node[c].end) {
        const htree_node *x = &t->node[c];
        if (s[c].out)
            continue;
        if (c == best) {
            s[c].keep = 1;
            continue;
        }
        if (x->kind == HT_TEXT)
            continue;
        float bonus = ha_same_names(x, &t->node[best]) ? s[best].score * 0.2f : 0;
        if (s[c].scored && ha_sibling_score(a, c) + bonus >= threshold) {
            s[c].keep = 1;
        } else if (x->kind == HT_P || (ha_paragraph(x) && s[c].own == s[c].letters)) {
            /* a paragraph, or an element with text and no blocks in it (readability
               turns such a div into a paragraph) */
            float ld = ha_link_density(&s[c]);
            uint32_t len = s[c].letters;
            if ((len > 80 && ld < 0.25f) || (len > 0 && len <= 80 && ld == 0 && ha_has_sentence(a, c)))
                s[c].keep = 1;
        }
    }
}

/* ---- The lead ---- */

#define HA_DESC_WORDS 128         /* words of the page's description compared */
#define HA_LEAD_WORDS 512         /* words of a candidate lead compared */

/* Hashes of the words of s[0..n) (runs of ASCII letters and digits and of bytes over
 * 0x7F, ASCII lower-cased) into out, at most max; returns how many. */
static unsigned ha_words(const char *s, size_t n, uint32_t *out, unsigned max)
{
    unsigned k = 0;
    size_t i = 0;
    while (i < n && k < max) {
        uint32_t h = 2166136261u;
        size_t j = i;
        for (; j < n; j++) {
            unsigned char c = (unsigned char)s[j];
            if (c >= 'A' && c <= 'Z')
                c |= 0x20;
            else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80))
                break;
            h = (h ^ c) * 16777619u;
        }
        if (j > i)
            out[k++] = h;
        i = j + 1;
    }
    return k;
}

/* Words of element e's own text (its text and inline elements' text), at most max. */
static unsigned ha_own_words(const ha *a, uint32_t e, uint32_t *out, unsigned max)
{
    const htree *t = a->t;
    unsigned k = 0;
    for (uint32_t j = e + 1; j < t->node[e].end && k < max; j++) {
        const htree_node *y = &t->node[j];
        if (y->kind == HT_TEXT)
            k += ha_words(t->text + y->off, y->len, out + k, max - k);
        else if (!(y->flags & HTF_INLINE))
            j = y->end - 1;     /* a block of its own */
    }
    return k;
}

/* The page's lead, when the article's container leaves it out: the paragraph before
 * the article, near it (under its parent, grandparent or great-grandparent), whose
 * own text has four fifths of the words of the page's description (Open Graph's, else
 * the description <meta>; 8 words or more), and no more than four times its letters
 * (a lead, not a container). It joins the article's roots. */
static void ha_lead(ha *a)
{
    const htree *t = a->t;
    ha_node *s = a->s;
    uint32_t dw[HA_DESC_WORDS], ew[HA_LEAD_WORDS];
    unsigned nd = ha_words(t->desc, strlen(t->desc), dw, HA_DESC_WORDS);
    if (nd < 8)
        return;
    uint32_t first = 0, dletters, dcommas;
    while (first < t->n && !s[first].keep)
        first++;
    if (first == t->n)
        return;
    ha_count(t->desc, strlen(t->desc), &dletters, &dcommas);
    uint32_t near = first;
    for (int up = 0; up < 3 && t->node[near].parent != near; up++)
        near = t->node[near].parent;
    for (uint32_t i = near + 1; i < first; i++) {
        const htree_node *x = &t->node[i];
        if (s[i].out) {
            i = x->end - 1;
            continue;
        }
        if (x->end > first || !ha_paragraph(x) || s[i].own < 25 ||
            s[i].own > 4 * (uint64_t)dletters)
            continue;
        unsigned ne = ha_own_words(a, i, ew, HA_LEAD_WORDS), hit = 0;
        for (unsigned d = 0; d < nd; d++)
            for (unsigned k = 0; k < ne; k++)
                if (ew[k] == dw[d]) {
                    hit++;
                    break;
                }
        if (5 * hit >= 4 * nd) {
            s[i].keep = 1;
            return;
        }
    }
}

/* Whether a container inside the article looks like furniture (readability's
 * conditional cleaning): few commas and many links, images, list items or inputs
 * for its paragraphs. */
static int ha_clean_away(const ha *a, uint32_t i)
{
    const htree_node *x = &a->t->node[i];
    const ha_node *s = &a->s[i];
    int weight = (a->pass & HA_WEIGHT) ? x->weight : 0;
    if (weight < 0 && weight + (s->scored ? s->score : 0) < 0)
        return 1;               /* named as furniture, and no paragraphs make up for it */
    if (s->commas >= 10)
        return 0;
    int list = x->kind == HT_UL || x->kind == HT_OL;
    float ld = ha_link_density(s);
    uint32_t p = s->np, img = s->nimg;
    int64_t li = (int64_t)s->nli - 100;
    if (img > 1 && (float)p / (float)img < 0.5f)
        return 1;
    if (!list && li > (int64_t)p)
        return 1;
    if (s->ninput > p / 3)
        return 1;
    if (!list && s->letters < 25 && (img == 0 || img > 2) && ld > 0)
        return 1;
    if (!list && weight < 25 && ld > 0.2f)
        return 1;
    if (weight >= 25 && ld > 0.5f)
        return 1;
    if ((s->nembed == 1 && s->letters < 75) || s->nembed > 1)
        return 1;
    return 0;
}

/* Cuts furniture out of the article's roots: furniture by name with little text,
 * headlines, furniture tags, captions, and (HA_CLEAN) containers ha_clean_away
 * judges. */
static void ha_cut(ha *a)
{
    const htree *t = a->t;
    ha_node *s = a->s;
    for (uint32_t i = 0; i < t->n; i++) {
        const htree_node *x = &t->node[i];
        if (!s[i].keep)
            continue;
        for (uint32_t j = i + 1; j < x->end; j++) {
            const htree_node *y = &t->node[j];
            if (y->kind == HT_TEXT || s[j].out || s[y->parent].cut) {
                s[j].cut = s[y->parent].cut;
                continue;
            }
            if (j <= a->core && a->core < y->end)
                continue;       /* the best container and what holds it stay */
            int cut = 0;
            switch (y->kind) {
            case HT_NAV: case HT_ASIDE: case HT_FOOTER: case HT_MENU: case HT_H1:
            case HT_FIGCAPTION: case HT_FORM:
                cut = y->kind != HT_FORM || ha_clean_away(a, j);
                break;
            case HT_TABLE: case HT_UL: case HT_OL: case HT_DIV: case HT_SECTION:
                cut = (a->pass & HA_CLEAN) && ha_clean_away(a, j);
                break;
            case HT_H:
                cut = (a->pass & HA_WEIGHT) && y->weight < 0;
                break;
            default:
                break;
            }
            if (!cut && (y->flags & HTF_FURNITURE) && !(y->flags & HTF_ARTICLE) &&
                s[j].letters < 500 && y->kind != HT_P)
                cut = 1;
            s[j].cut = (uint8_t)cut;
        }
        i = x->end - 1;
    }
}

/* Letters of the article: the roots' text less what is out or cut. */
static uint64_t ha_letters(const ha *a)
{
    const htree *t = a->t;
    const ha_node *s = a->s;
    uint64_t n = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!s[i].keep)
            continue;
        for (uint32_t j = i; j < t->node[i].end; j++)
            if (t->node[j].kind == HT_TEXT && !s[j].out && !s[j].cut)
                n += s[j].letters;
        i = t->node[i].end - 1;
    }
    return n;
}

/* ---- Output ---- */

typedef struct ha_out {
    char *buf;
    size_t len, cap;
    int space, line;          /* a space / a line break is due before the next text */
    int fail;
} ha_out;

static void ha_put(ha_out *o, const char *s, size_t n)
{
    if (o->fail)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *b = realloc(o->buf, cap);
        if (b == NULL) {
            o->fail = 1;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

/* Text with runs of white space as one space, none at a block's edges. */
static void ha_text(ha_out *o, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (ha_space((unsigned char)s[i])) {
            o->space = 1;
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !ha_space((unsigned char)s[j]))
            j++;
        if (o->len && o->line)
            ha_put(o, "\n", 1);
        else if (o->len && o->space)
            ha_put(o, " ", 1);
        o->line = o->space = 0;
        ha_put(o, s + i, j - i);
        i = j;
    }
}

/* Writes the text of the nodes marked keep (minus what is out or cut), blocks on lines
 * of their own. */
static void ha_write(const ha *a, ha_out *o, int all)
{
    const htree *t = a->t;
    const ha_node *s = a->s;
    uint32_t stack[HTREE_DEPTH + 1];
    unsigned depth = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        if (!all && !s[i].keep)
            continue;
        uint32_t end = t->node[i].end;
        for (uint32_t j = i; j < end; j++) {
            const htree_node *y = &t->node[j];
            while (depth && t->node[stack[depth - 1]].end <= j) {
                depth--;
                o->line = 1;    /* a block element ends */
            }
            if (s[j].out || s[j].cut) {
                j = y->end - 1;
                continue;
            }
            if (y->kind == HT_TEXT) {
                ha_text(o, t->text + y->off, y->len);
            } else if (!(y->flags & HTF_INLINE)) {
                o->line = 1;
                if (depth < HTREE_DEPTH + 1 && y->end > j + 1)
                    stack[depth++] = j;
            }
        }
        depth = 0;
        o->line = 1;
        i = end - 1;
    }
}

/* ---- The passes ---- */

#ifdef HART_DEBUG
static void ha_debug(const ha *a, uint32_t best)
{
    const htree *t = a->t;
    fprintf(stderr, "pass %u best %u kind %d score %.1f letters %u\n", a->pass, best,
            t->node[best].kind, a->s[best].score, a->s[best].letters);
    for (uint32_t i = 0; i < t->n; i++) {
        if (a->s[i].keep)
            fprintf(stderr, "  keep %u kind %d score %.1f letters %u\n", i, t->node[i].kind,
                    a->s[i].score, a->s[i].letters);
        if (a->s[i].cut && !a->s[t->node[i].parent].cut && t->node[i].kind != HT_TEXT)
            fprintf(stderr, "  cut %u kind %d letters %u ld %.2f w %d fl %d\n", i,
                    t->node[i].kind, a->s[i].letters, ha_link_density(&a->s[i]),
                    t->node[i].weight, t->node[i].flags);
    }
}
#endif

/* One pass: marks the article's roots; returns its letters (0: nothing scored). */
static uint64_t ha_pass(ha *a, unsigned pass)
{
    a->pass = pass;
    ha_measure(a);
    ha_score(a);
    uint32_t best = ha_top(a);
    if (best == UINT32_MAX)
        return 0;
    ha_siblings(a, best);
    ha_lead(a);
    ha_cut(a);
#ifdef HART_DEBUG
    ha_debug(a, best);
#endif
    return ha_letters(a);
}

int hart_extract(const htree *t, hart_result *out)
{
    static const unsigned passes[] = { HA_STRIP | HA_WEIGHT | HA_CLEAN, HA_WEIGHT | HA_CLEAN,
                                       HA_CLEAN, 0 };
    memset(out, 0, sizeof *out);
    ha a = { .t = t };
    ha_out o = { 0 };
    if (t->n == 0) {
        out->text = calloc(1, 1);
        out->rule = HART_RULE_EMPTY;
        return out->text ? 0 : -1;
    }
    a.s = malloc(t->n * sizeof *a.s);
    a.raw = calloc(t->n, sizeof *a.raw);
    a.body = calloc(t->n, 1);
    if (a.s == NULL || a.raw == NULL || a.body == NULL) {
        free(a.s);
        free(a.raw);
        free(a.body);
        return -1;
    }
    ha_raw(&a);
    uint64_t best = 0;
    unsigned best_pass = 0;
    int found = 0;
    for (size_t k = 0; k < sizeof passes / sizeof passes[0]; k++) {
        uint64_t n = ha_pass(&a, passes[k]);
        if (n > best || (!found && n > 0)) {
            best = n;
            best_pass = passes[k];
            found = 1;
        }
        if (n >= HART_MIN_LETTERS)
            break;
    }
    if (found) {
        if (a.pass != best_pass)
            ha_pass(&a, best_pass);
        ha_write(&a, &o, 0);
        out->rule = best_pass == passes[0] ? HART_RULE_ARTICLE : HART_RULE_RELAXED;
    } else {
        a.pass = HA_STRIP;      /* no paragraph: the page less its furniture */
        ha_measure(&a);
        ha_write(&a, &o, 1);
        out->rule = HART_RULE_PAGE;
    }
    free(a.s);
    free(a.raw);
    free(a.body);
    ha_put(&o, "", 0);
    if (o.fail) {
        free(o.buf);
        return -1;
    }
    o.buf[o.len] = '\0';
    out->text = o.buf;
    out->len = o.len;
    if (o.len == 0)
        out->rule = HART_RULE_EMPTY;
    return 0;
}
