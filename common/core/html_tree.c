/* html_tree.c: builds the compact tree of html_tree.h from html.c's SAX events, and
 * reads what an element's name and attributes say about it (class and id words,
 * ARIA roles, itemprop, hidden elements). The word lists are what readability-style
 * extractors look for; docs/fingerprint.md "Algorithm v5" lists them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "html_tree.h"

/* ---- Element names ---- */

static const struct { const char *name; uint8_t kind; } ht_kinds[] = {
    {"a", HT_A}, {"p", HT_P}, {"div", HT_DIV}, {"section", HT_SECTION},
    {"article", HT_ARTICLE}, {"main", HT_MAIN}, {"header", HT_HEADER},
    {"footer", HT_FOOTER}, {"nav", HT_NAV}, {"aside", HT_ASIDE}, {"h1", HT_H1},
    {"h2", HT_H}, {"h3", HT_H}, {"h4", HT_H}, {"h5", HT_H}, {"h6", HT_H},
    {"pre", HT_PRE}, {"td", HT_TD}, {"th", HT_TH}, {"tr", HT_TR}, {"table", HT_TABLE},
    {"blockquote", HT_BLOCKQUOTE}, {"ul", HT_UL}, {"ol", HT_OL}, {"li", HT_LI},
    {"dl", HT_DL}, {"dd", HT_DD}, {"dt", HT_DT}, {"form", HT_FORM},
    {"fieldset", HT_FORM}, {"figure", HT_FIGURE}, {"figcaption", HT_FIGCAPTION},
    {"img", HT_IMG}, {"picture", HT_IMG}, {"br", HT_BR}, {"address", HT_ADDRESS},
    {"body", HT_BODY}, {"input", HT_INPUT}, {"embed", HT_EMBED}, {"video", HT_EMBED},
    {"audio", HT_EMBED}, {"code", HT_CODE}, {"menu", HT_MENU}, {"hr", HT_HR},
};

int htree_kind(const char *name)
{
    for (size_t i = 0; i < sizeof ht_kinds / sizeof ht_kinds[0]; i++)
        if (ht_kinds[i].name[0] == name[0] && strcmp(ht_kinds[i].name, name) == 0)
            return ht_kinds[i].kind;
    return HT_OTHER;
}

/* Elements whose text is a widget's, not the page's. */
static const char *const ht_widgets[] = { "button", "select", "textarea", "option", NULL };

/* ---- What attributes say ---- */

/* Substrings of class and id values (lower case) that name site furniture: the
 * element is dropped from the search for the article unless a word of ht_maybe is
 * there too (a "content-sidebar" may hold the content). */
static const char *const ht_unlikely[] = {
    "-ad-", "ai2html", "banner", "breadcrumb", "combx", "comment", "community",
    "cover-wrap", "disqus", "extra", "footer", "gdpr", "header", "legends", "menu",
    "related", "remark", "replies", "rss", "shoutbox", "sidebar", "skyscraper", "social",
    "sponsor", "supplemental", "ad-break", "agegate", "pagination", "pager", "popup",
    "yom-remote", "cookie", "consent", "newsletter", "subscribe", "navbar", NULL,
};
static const char *const ht_maybe[] = {
    "and", "article", "body", "column", "content", "main", "shadow", NULL,
};
/* Weight: +25 for a value naming content, -25 for one naming furniture. */
static const char *const ht_positive[] = {
    "article", "body", "content", "entry", "hentry", "h-entry", "main", "page",
    "pagination", "post", "text", "blog", "story", NULL,
};
static const char *const ht_negative[] = {
    "-ad-", "hidden", "banner", "combx", "comment", "com-", "contact", "foot", "footer",
    "footnote", "gdpr", "masthead", "media", "meta", "outbrain", "promo", "related",
    "scroll", "share", "shoutbox", "sidebar", "skyscraper", "sponsor", "shopping", "tags",
    "tool", "widget", "byline", "author", "caption", "newsletter", "subscribe", NULL,
};
/* Furniture inside an article: removed from the article's text even when the article
 * holds it (whole words of the value, split at anything but letters and digits). */
static const char *const ht_furniture[] = {
    "share", "sharing", "social", "related", "newsletter", "subscribe", "subscription",
    "signup", "comments", "comment", "disqus", "byline", "author", "authors", "caption",
    "credit", "credits", "promo", "advert", "advertisement", "ad", "ads", "sponsored",
    "breadcrumb", "breadcrumbs", "tags", "recommended", "recirculation", "outbrain",
    "taboola", "popular", "trending", "cookie", "consent", "toolbar", "print",
    "dateline", "timestamp", "meta", "nav", "navigation", "menu", "sidebar", "footer",
    "modal", "popup", "paywall", "rating", "pagination", NULL,
};
/* Whole words of class and id values naming readers' comments: never the article. */
static const char *const ht_comments[] = {
    "comment", "comments", "commentlist", "disqus", "replies", "respond", NULL,
};
/* Class words naming the article's body itself (trafilatura's known containers). */
static const char *const ht_bodynames[] = {
    "articlebody", "article-body", "article_body", "articlecontent", "article-content",
    "article_content", "article-text", "article__body", "article__content", "story-body",
    "storybody", "story-content", "post-content", "post_content", "postcontent",
    "post-body", "entry-content", "entry_content", "entry-body", "content-body",
    "body-text", "bodytext", "main-content", "article-main", "post-text", "text-body",
    NULL,
};
static const char *const ht_drop_roles[] = {
    "navigation", "banner", "contentinfo", "complementary", "search", "dialog",
    "alertdialog", "alert", "menu", "menubar", NULL,
};

/* The four substring lists above as one index: for each byte, the (list, string)
 * pairs starting with it, so a value is scanned once for all of them. */
enum { HT_L_UNLIKELY = 1, HT_L_MAYBE = 2, HT_L_POSITIVE = 4, HT_L_NEGATIVE = 8 };
#define HT_SUB_MAX 32             /* strings of all lists starting with one byte */
static struct {
    uint8_t n[256];
    struct { const char *s; uint8_t len, list; } e[256][HT_SUB_MAX];
} ht_sub;
static pthread_once_t ht_sub_once = PTHREAD_ONCE_INIT;

static void ht_sub_add(const char *const *list, uint8_t bit)
{
    for (size_t i = 0; list[i]; i++) {
        uint8_t c = (uint8_t)list[i][0];
        if (ht_sub.n[c] == HT_SUB_MAX)
            abort();            /* the tables above outgrew the index: raise HT_SUB_MAX */
        ht_sub.e[c][ht_sub.n[c]].s = list[i];
        ht_sub.e[c][ht_sub.n[c]].len = (uint8_t)strlen(list[i]);
        ht_sub.e[c][ht_sub.n[c]++].list = bit;
    }
}

static void ht_sub_init(void)
{
    ht_sub_add(ht_unlikely, HT_L_UNLIKELY);
    ht_sub_add(ht_maybe, HT_L_MAYBE);
    ht_sub_add(ht_positive, HT_L_POSITIVE);
    ht_sub_add(ht_negative, HT_L_NEGATIVE);
}

/* The lists (HT_L_*) one of whose strings s (lower case, n bytes) contains. */
static unsigned ht_lists(const char *s, size_t n)
{
    pthread_once(&ht_sub_once, ht_sub_init);
    unsigned lists = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        for (unsigned k = 0; k < ht_sub.n[c]; k++)
            if (!(lists & ht_sub.e[c][k].list) && ht_sub.e[c][k].len <= n - i &&
                memcmp(s + i, ht_sub.e[c][k].s, ht_sub.e[c][k].len) == 0)
                lists |= ht_sub.e[c][k].list;
    }
    return lists;
}

/* Whether s (lower case) has a part of list's: parts are words (runs of letters and
 * digits), or with tokens set class tokens (runs of anything but white space). */
static int ht_has_part(const char *s, const char *const *list, int tokens)
{
#define HT_IN_PART(c) (tokens ? (c) && (c) != ' ' && (c) != '\t' && (c) != '\n'     \
                             : ((c) >= 'a' && (c) <= 'z') || ((c) >= '0' && (c) <= '9'))
    while (*s) {
        while (*s && !HT_IN_PART(*s))
            s++;
        const char *w = s;
        while (*s && HT_IN_PART(*s))
            s++;
        size_t n = (size_t)(s - w);
        for (size_t i = 0; n && list[i]; i++)
            if (list[i][0] == w[0] && strlen(list[i]) == n && memcmp(list[i], w, n) == 0)
                return 1;
    }
    return 0;
#undef HT_IN_PART
}

/* A lower-case copy of v into buf (cut at n - 1 bytes). */
static void ht_lower(char *buf, size_t n, const char *v)
{
    size_t i = 0;
    for (; v[i] && i + 1 < n; i++)
        buf[i] = (char)(v[i] >= 'A' && v[i] <= 'Z' ? v[i] | 0x20 : v[i]);
    buf[i] = '\0';
}

/* Whether a style attribute hides the element. */
static int ht_style_hidden(const char *v)
{
    char s[256];
    size_t k = 0;
    for (size_t i = 0; v[i] && k + 1 < sizeof s; i++)
        if (v[i] != ' ' && v[i] != '\t')
            s[k++] = (char)(v[i] >= 'A' && v[i] <= 'Z' ? v[i] | 0x20 : v[i]);
    s[k] = '\0';
    return strstr(s, "display:none") || strstr(s, "visibility:hidden");
}

/* Flags and weight of one class or id value. */
static void ht_name_value(const char *v, uint8_t *flags, int *weight, int is_class)
{
    char s[512];
    ht_lower(s, sizeof s, v);
    unsigned lists = ht_lists(s, strlen(s));
    if ((lists & HT_L_UNLIKELY) && !(lists & HT_L_MAYBE))
        *flags |= HTF_UNLIKELY;
    if (lists & HT_L_NEGATIVE)
        *weight -= 25;
    if (lists & HT_L_POSITIVE)
        *weight += 25;
    if (ht_has_part(s, ht_furniture, 0))
        *flags |= HTF_FURNITURE;
    if (ht_has_part(s, ht_comments, 0))
        *flags |= HTF_NEVER;
    if (ht_has_part(s, ht_bodynames, is_class))
        *flags |= HTF_BODYHINT;
}

/* FNV-1a of a class value, never 0. */
static uint32_t ht_class_hash(const char *v)
{
    uint32_t h = 2166136261u;
    for (; *v; v++)
        h = (h ^ (uint8_t)*v) * 16777619u;
    return h ? h : 1;
}

/* Reads an element's attributes into x (flags, weight, class hash); returns 1 when
 * the element is hidden (its content is no text). */
static int ht_attributes(const char *const *atts, htree_node *x, uint8_t *flags, int *weight)
{
    for (size_t i = 0; atts && atts[i]; i += 2) {
        const char *k = atts[i], *v = atts[i + 1] ? atts[i + 1] : "";
        if (strcmp(k, "class") == 0 && v[0])
            x->cls = ht_class_hash(v);
        if (strcmp(k, "class") == 0 || strcmp(k, "id") == 0) {
            ht_name_value(v, flags, weight, k[0] == 'c');
        } else if (strcmp(k, "role") == 0) {
            char s[64];
            ht_lower(s, sizeof s, v);
            for (size_t j = 0; ht_drop_roles[j]; j++)
                if (strcmp(s, ht_drop_roles[j]) == 0)
                    *flags |= HTF_UNLIKELY | HTF_FURNITURE | HTF_NEVER | HTF_ROLE;
            if (strcmp(s, "main") == 0 || strcmp(s, "article") == 0)
                *flags |= HTF_ARTICLE;
        } else if (strcmp(k, "itemprop") == 0) {
            if (strcasestr(v, "articlebody") || strcasestr(v, "reviewbody"))
                *flags |= HTF_ARTICLE | HTF_BODYHINT;
        } else if (strcmp(k, "hidden") == 0) {
            return 1;
        } else if (strcmp(k, "aria-hidden") == 0) {
            if (strcasecmp(v, "true") == 0)
                return 1;
        } else if (strcmp(k, "style") == 0) {
            if (ht_style_hidden(v))
                return 1;
        }
    }
    return 0;
}

/* ---- Building ---- */

void htree_init(htree *t)
{
    memset(t, 0, sizeof *t);
}

void htree_reset(htree *t)
{
    t->n = 0;
    t->ntext = 0;
    t->depth = t->over = t->skip = 0;
    t->full = 0;
    t->desc[0] = '\0';
    t->desc_og = 0;
}

void htree_free(htree *t)
{
    free(t->node);
    free(t->text);
    htree_init(t);
}

/* A new node under the innermost open element; NULL once a cap is reached. */
static htree_node *ht_push(htree *t)
{
    if (t->full)
        return NULL;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 1024;
        if (cap > HTREE_MAX_NODES)
            cap = HTREE_MAX_NODES;
        htree_node *nn = t->n < cap ? realloc(t->node, cap * sizeof *nn) : NULL;
        if (nn == NULL) {
            t->full = 1;
            return NULL;
        }
        t->node = nn;
        t->cap = cap;
    }
    htree_node *x = &t->node[t->n];
    memset(x, 0, sizeof *x);
    x->parent = t->depth ? t->open[t->depth - 1] : t->n;
    x->end = t->n + 1;
    t->n++;
    return x;
}

/* A <meta> naming the page's description: kept in t->desc (Open Graph's first). */
static void ht_meta(htree *t, const char *const *atts)
{
    const char *key = NULL, *content = NULL;
    for (size_t i = 0; atts && atts[i]; i += 2) {
        if (strcmp(atts[i], "property") == 0 || strcmp(atts[i], "name") == 0)
            key = atts[i + 1];
        else if (strcmp(atts[i], "content") == 0)
            content = atts[i + 1];
    }
    if (key == NULL || content == NULL)
        return;
    int og = strcasecmp(key, "og:description") == 0;
    if (!og && (strcasecmp(key, "description") != 0 || t->desc_og || t->desc[0]))
        return;
    if (og && t->desc_og)
        return;
    snprintf(t->desc, sizeof t->desc, "%s", content);
    t->desc_og = og;
}

void htree_start(htree *t, const char *name, int how, const char *const *atts)
{
    if (name[0] == 'm' && strcmp(name, "meta") == 0)
        ht_meta(t, atts);
    if (t->skip) {
        t->skip++;
        return;
    }
    uint8_t flags = how == HTREE_INLINE ? HTF_INLINE : 0;
    int weight = 0;
    htree_node a = { 0 };
    int hidden = ht_attributes(atts, &a, &flags, &weight);
    if (how == HTREE_SKIP || hidden) {
        t->skip = 1;
        return;
    }
    for (size_t i = 0; ht_widgets[i]; i++)
        if (strcmp(name, ht_widgets[i]) == 0) {
            t->skip = 1;
            return;
        }
    if (t->over || t->depth == HTREE_DEPTH) {
        t->over++;
        return;
    }
    htree_node *x = ht_push(t);
    if (x == NULL) {
        t->over++;
        return;
    }
    x->cls = a.cls;
    x->kind = (uint8_t)htree_kind(name);
    if (x->kind == HT_ARTICLE || x->kind == HT_MAIN)
        flags |= HTF_ARTICLE;
    x->flags = flags;
    x->weight = (int16_t)weight;
    t->open[t->depth++] = t->n - 1;
}

/* The innermost open element ends. */
static void ht_pop(htree *t)
{
    uint32_t i = t->open[--t->depth];
    t->node[i].end = t->n;
}

void htree_end(htree *t, const char *name)
{
    (void)name;
    if (t->skip) {
        t->skip--;
        return;
    }
    if (t->over) {
        t->over--;
        return;
    }
    if (t->depth)
        ht_pop(t);
}

void htree_text(htree *t, const char *s, size_t n)
{
    if (t->skip || n == 0 || t->full)
        return;
    if (t->ntext + n > HTREE_MAX_TEXT) {
        t->full = 1;
        return;
    }
    if (t->ntext + n > t->captext) {
        size_t cap = t->captext ? t->captext : 65536;
        while (cap < t->ntext + n)
            cap *= 2;
        if (cap > HTREE_MAX_TEXT)
            cap = HTREE_MAX_TEXT;
        char *nt = realloc(t->text, cap);
        if (nt == NULL) {
            t->full = 1;
            return;
        }
        t->text = nt;
        t->captext = cap;
    }
    /* a run right after the last one in the same element grows it */
    htree_node *last = t->n ? &t->node[t->n - 1] : NULL;
    if (last && last->kind == HT_TEXT && t->depth && last->parent == t->open[t->depth - 1] &&
        last->off + last->len == t->ntext) {
        memcpy(t->text + t->ntext, s, n);
        t->ntext += n;
        last->len += (uint32_t)n;
        return;
    }
    htree_node *x = ht_push(t);
    if (x == NULL)
        return;
    x->kind = HT_TEXT;
    x->flags = HTF_INLINE;
    x->off = (uint32_t)t->ntext;
    x->len = (uint32_t)n;
    memcpy(t->text + t->ntext, s, n);
    t->ntext += n;
}

void htree_restart(htree *t)
{
    while (t->depth)
        ht_pop(t);
    t->over = t->skip = 0;
}

void htree_finish(htree *t)
{
    htree_restart(t);
}
