/* shpy_module.c: the module simhash._simhash: argument conversion shared by the
 * extension (ints, iterables and buffers to uint64_t), the module functions
 * (unsigned_hash, num_differing_bits, compute, fingerprint, extract: the Extraction
 * named tuple, find_all, find_clusters) and module initialisation. The algorithms are the project's own common/core code;
 * this file only converts arguments and results and releases the GIL around long work. */
#include "shpy.h"

#include "fingerprint.h"
#include "html.h"
#include "hamming.h"
#include "match.h"
#include "perm.h"

#include <stdlib.h>
#include <string.h>

PyObject *shpy_module;
static shpy_state shpy_the_state;

shpy_state *shpy_get_state(void)
{
    return &shpy_the_state;
}

/* ---- Argument conversion ---- */

/* Set OverflowError for value o of argument what (item idx when idx >= 0). Returns -1. */
static int shpy_range_error(PyObject *o, const char *what, Py_ssize_t idx)
{
    if (idx >= 0)
        PyErr_Format(PyExc_OverflowError, "%s[%zd]: %R is out of range for a 64-bit "
                     "fingerprint (0..2**64-1)", what, idx, o);
    else
        PyErr_Format(PyExc_OverflowError, "%s: %R is out of range for a 64-bit "
                     "fingerprint (0..2**64-1)", what, o);
    return -1;
}

/* One fingerprint; idx >= 0 names an item of a sequence in messages. Returns 0 or -1. */
static int shpy_u64_at(PyObject *o, const char *what, Py_ssize_t idx, uint64_t *out)
{
    unsigned long long v;

    if (PyLong_Check(o)) {
        v = PyLong_AsUnsignedLongLong(o);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            return shpy_range_error(o, what, idx);
        }
        *out = (uint64_t)v;
        return 0;
    }
    if (PyFloat_Check(o) || !PyIndex_Check(o)) {
        if (idx >= 0)
            PyErr_Format(PyExc_TypeError, "%s[%zd] must be an int, not %.100s", what, idx,
                         Py_TYPE(o)->tp_name);
        else
            PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
                         Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *n = PyNumber_Index(o);       /* numpy integer scalars and the like */
    if (!n)
        return -1;
    int rc = shpy_u64_at(n, what, idx, out);
    Py_DECREF(n);
    return rc;
}

int shpy_u64(PyObject *o, const char *what, uint64_t *out)
{
    return shpy_u64_at(o, what, -1, out);
}

void shpy_u64s_release(shpy_u64s *s)
{
    if (s->has_view) {
        PyBuffer_Release(&s->view);
        s->has_view = 0;
    }
    free(s->owned);
    s->owned = NULL;
    s->v = NULL;
    s->n = 0;
}

/* The u64s of a buffer: items of format Q (or L of 8 bytes), native or little-endian
 * order marks, or unsigned bytes read as little-endian 8-byte words. Returns 0 or -1;
 * the view stays in s (released by shpy_u64s_release). */
static int shpy_u64s_buffer(PyObject *o, const char *what, shpy_u64s *s)
{
    if (PyObject_GetBuffer(o, &s->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s: a buffer of fingerprints must be "
                         "C-contiguous", what);
        }
        return -1;
    }
    s->has_view = 1;
    const Py_buffer *b = &s->view;
    const char *f = b->format ? b->format : "B";
    if (*f == '@' || *f == '=' || (PY_LITTLE_ENDIAN && *f == '<'))
        f++;
    int words = b->itemsize == 8 && (strcmp(f, "Q") == 0 || strcmp(f, "L") == 0) &&
                b->ndim <= 1;
    int bytes = b->itemsize == 1 && (strcmp(f, "B") == 0 || strcmp(f, "c") == 0);
    if (!words && !bytes) {
        PyErr_Format(PyExc_TypeError, "%s: a buffer of fingerprints must hold unsigned "
                     "64-bit items (array('Q'), numpy.uint64) or bytes of little-endian "
                     "words, not format '%s' with item size %zd", what,
                     b->format ? b->format : "B", b->itemsize);
        return -1;
    }
    if (bytes && b->len % 8 != 0) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of 8-byte "
                     "fingerprints", what, b->len);
        return -1;
    }
    s->n = (size_t)b->len / 8;
    if (words || (PY_LITTLE_ENDIAN && ((uintptr_t)b->buf % _Alignof(uint64_t)) == 0)) {
        s->v = b->buf;
        return 0;
    }
    s->owned = malloc(s->n ? s->n * sizeof(*s->owned) : 1);
    if (!s->owned) {
        PyErr_NoMemory();
        return -1;
    }
    const unsigned char *p = b->buf;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v = 0;
        for (int k = 7; k >= 0; k--)
            v = v << 8 | p[8 * i + (size_t)k];
        s->owned[i] = v;
    }
    s->v = s->owned;
    return 0;
}

/* Grow s->owned to hold at least want items (cap in *cap). Returns 0 or -1. */
static int shpy_u64s_reserve(shpy_u64s *s, size_t want, size_t *cap)
{
    if (want <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    if (nc < want)
        nc = want;
    if (nc > PY_SSIZE_T_MAX / sizeof(*s->owned)) {
        PyErr_NoMemory();
        return -1;
    }
    uint64_t *nv = realloc(s->owned, nc * sizeof(*nv));
    if (!nv) {
        PyErr_NoMemory();
        return -1;
    }
    s->owned = nv;
    *cap = nc;
    return 0;
}

int shpy_u64s_get(PyObject *o, const char *what, shpy_u64s *s)
{
    size_t cap = 0;

    memset(s, 0, sizeof(*s));
    if (PyUnicode_Check(o) || PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an iterable of ints or a buffer of "
                     "uint64, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (PyObject_CheckBuffer(o))
        return shpy_u64s_buffer(o, what, s);
    if (PyList_CheckExact(o) || PyTuple_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        if (shpy_u64s_reserve(s, n > 0 ? (size_t)n : 1, &cap) < 0)
            return -1;
        /* a list may change size while ints with __index__ run Python code: index
         * through the macro each time, bounded by the current size */
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o) && i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(o, i);
            Py_INCREF(item);
            int rc = shpy_u64_at(item, what, i, &s->owned[i]);
            Py_DECREF(item);
            if (rc < 0)
                return -1;
            s->n = (size_t)i + 1;
        }
        s->v = s->owned;
        return 0;
    }
    PyObject *it = PyObject_GetIter(o);
    if (!it) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s must be an iterable of ints or a buffer of "
                         "uint64, not %.100s", what, Py_TYPE(o)->tp_name);
        }
        return -1;
    }
    Py_ssize_t hint = PyObject_LengthHint(o, 64);
    if (hint < 0 || shpy_u64s_reserve(s, hint > 0 ? (size_t)hint : 1, &cap) < 0) {
        Py_DECREF(it);
        return -1;
    }
    PyObject *item;
    while ((item = PyIter_Next(it)) != NULL) {
        int rc = shpy_u64s_reserve(s, s->n + 1, &cap);
        if (rc == 0)
            rc = shpy_u64_at(item, what, (Py_ssize_t)s->n, &s->owned[s->n]);
        Py_DECREF(item);
        if (rc < 0) {
            Py_DECREF(it);
            return -1;
        }
        s->n++;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return -1;
    s->v = s->owned;
    return 0;
}

int shpy_int_range(PyObject *o, const char *what, long lo, long hi, long *out)
{
    int overflow = 0;
    long v;

    if (PyFloat_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *n = PyNumber_Index(o);
    if (!n)
        return -1;
    v = PyLong_AsLongAndOverflow(n, &overflow);
    Py_DECREF(n);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s must be in %ld..%ld, got %R", what, lo, hi, o);
        return -1;
    }
    *out = v;
    return 0;
}

int shpy_text(PyObject *o, const char *what, const char **data, Py_ssize_t *len,
              Py_buffer *view, int *has_view)
{
    *has_view = 0;
    if (PyUnicode_Check(o)) {
        *data = PyUnicode_AsUTF8AndSize(o, len);
        return *data ? 0 : -1;
    }
    if (!PyObject_CheckBuffer(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be str or a bytes-like object, not %.100s",
                     what, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    *has_view = 1;
    *data = view->buf;
    *len = view->len;
    return 0;
}

/* ---- Functions ---- */

PyDoc_STRVAR(shpy_unsigned_hash_doc,
"unsigned_hash(data) -> int\n\n"
"The 64-bit feature hash of simhash-py: the first 8 bytes of the MD5 digest of\n"
"data (a bytes-like object), read big-endian. str is refused: encode it first.");

static PyObject *shpy_unsigned_hash(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    unsigned char d[16];
    uint64_t v = 0;

    (void)self;
    if (PyUnicode_Check(arg) || !PyObject_CheckBuffer(arg)) {
        PyErr_Format(PyExc_TypeError, "unsigned_hash() needs a bytes-like object, not "
                     "%.100s%s", Py_TYPE(arg)->tp_name,
                     PyUnicode_Check(arg) ? " (encode the str first)" : "");
        return NULL;
    }
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (view.len > SHPY_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        shpy_md5(view.buf, (size_t)view.len, d);
        Py_END_ALLOW_THREADS
    } else {
        shpy_md5(view.buf, (size_t)view.len, d);
    }
    PyBuffer_Release(&view);
    for (int i = 0; i < 8; i++)
        v = v << 8 | d[i];
    return shpy_from_u64(v);
}

PyDoc_STRVAR(shpy_num_differing_bits_doc,
"num_differing_bits(a, b) -> int\n\n"
"Hamming distance of two 64-bit fingerprints: the number of bits that differ.");

static PyObject *shpy_num_differing_bits(PyObject *self, PyObject *const *args,
                                         Py_ssize_t nargs)
{
    uint64_t a, b;

    (void)self;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "num_differing_bits() takes 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    if (shpy_u64(args[0], "a", &a) < 0 || shpy_u64(args[1], "b", &b) < 0)
        return NULL;
    return PyLong_FromLong((long)ham_dist(a, b));
}

PyDoc_STRVAR(shpy_compute_doc,
"compute(hashes) -> int\n\n"
"The simhash of feature hashes (an iterable of ints in 0..2**64-1, or a buffer of\n"
"uint64 such as array('Q') or a numpy uint64 array): bit i is set when more hashes\n"
"have bit i set than unset. No hashes give 0. The same value as `simhash compute`.");

static PyObject *shpy_compute(PyObject *self, PyObject *arg)
{
    shpy_u64s hs;
    uint64_t fp;

    (void)self;
    if (shpy_u64s_get(arg, "hashes", &hs) < 0) {
        shpy_u64s_release(&hs);
        return NULL;
    }
    if (hs.n > SHPY_NOGIL_ITEMS) {
        Py_BEGIN_ALLOW_THREADS
        fp = fp_compute(hs.v, hs.n);
        Py_END_ALLOW_THREADS
    } else {
        fp = fp_compute(hs.v, hs.n);
    }
    shpy_u64s_release(&hs);
    return shpy_from_u64(fp);
}

/* Fingerprints of the lines of text (as `simhash fingerprint --lines`: lines end in
 * LF, one CR before it or at the very end is dropped, a last line without LF counts).
 * Sets *out (malloc'ed) and *n; returns 0 or -1 (out of memory). No Python calls. */
static int shpy_fp_lines(const char *p, size_t len, const fp_params *fpp, uint64_t **out,
                         size_t *n)
{
    const char *end = p + len;
    size_t cap = 0;

    *out = NULL;
    *n = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        size_t l = (size_t)(stop - p);
        if (l > 0 && p[l - 1] == '\r')
            l--;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            uint64_t *nv = realloc(*out, nc * sizeof(*nv));
            if (!nv)
                return -1;
            *out = nv;
            cap = nc;
        }
        (*out)[(*n)++] = fp_text_p(p, l, fpp);
        p = nl ? nl + 1 : end;
    }
    return 0;
}

PyDoc_STRVAR(shpy_fingerprint_doc,
"fingerprint(text, window=None, lines=False, algorithm=None, html=False,\n"
"            all_text=False)\n"
"    -> int | list[int]\n\n"
"The 64-bit simhash fingerprint of a text, exactly what `simhash fingerprint`\n"
"prints for the same bytes (and what a server with the same fingerprint-algorithm\n"
"returns for SIMHASH.FINGERPRINT). text is str (encoded as UTF-8) or a bytes-like\n"
"object. algorithm is 'v5' (the default), 'v1' or 'v1:W' (v2, v3 and v4 were\n"
"removed: ValueError); window=W is algorithm v1 with W tokens per shingle, 1..64.\n"
"html=True reads text as an HTML page (its visible text; with 'v5' its article,\n"
"unless all_text=True; ValueError when it cannot be read). With lines=True, every line is\n"
"a document, as `simhash fingerprint --lines`: a list with one fingerprint per line\n"
"(LF ends a line, a CR before it is dropped, a last line without LF counts).");

static PyObject *shpy_fingerprint(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "text", "window", "lines", "algorithm", "html", "all_text", NULL };
    PyObject *text, *wobj = NULL;
    int lines = 0, has_view = 0, rc = 0, html = 0, all_text = 0;
    long window = 0;
    const char *algo = NULL;
    fp_params fpp = {FP_VERSION_DEFAULT, 0};
    char err[200];
    const char *data;
    Py_ssize_t len;
    Py_buffer view;
    uint64_t fp = 0, *fps = NULL;
    size_t n = 0;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Opzpp:fingerprint", kwlist, &text, &wobj,
                                     &lines, &algo, &html, &all_text))
        return NULL;
    if (wobj && wobj != Py_None && shpy_int_range(wobj, "window", 1, FP_WINDOW_MAX, &window) < 0)
        return NULL;
    if (algo && fp_params_parse(algo, &fpp, err, sizeof err) != 0) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    if (window) {
        if (algo && fpp.version != FP_V1) {
            PyErr_SetString(PyExc_ValueError, "window applies to algorithm v1");
            return NULL;
        }
        if (algo && strchr(algo, ':') && fpp.window != (unsigned)window) {
            PyErr_Format(PyExc_ValueError, "window=%ld and algorithm='%s' disagree", window, algo);
            return NULL;
        }
        fpp.version = FP_V1;
        fpp.window = (unsigned)window;
    }
    if (html && lines) {
        PyErr_SetString(PyExc_ValueError, "lines=True reads text; it cannot be used with html=True");
        return NULL;
    }
    if (shpy_text(text, "text", &data, &len, &view, &has_view) < 0)
        return NULL;
    PyThreadState *ts = len > SHPY_NOGIL_BYTES ? PyEval_SaveThread() : NULL;
    if (lines)
        rc = shpy_fp_lines(data, (size_t)len, &fpp, &fps, &n);
    else if (html)
        rc = fp_html_text(data, (size_t)len, &fpp, all_text ? FP_HTML_ALL_TEXT : 0, &fp, err,
                          sizeof err);
    else
        fp = fp_text_p(data, (size_t)len, &fpp);
    if (ts)
        PyEval_RestoreThread(ts);
    if (has_view)
        PyBuffer_Release(&view);
    if (html && rc != 0) {
        PyErr_Format(PyExc_ValueError, "cannot read the HTML: %s", err);
        return NULL;
    }
    if (!lines)
        return shpy_from_u64(fp);
    if (rc < 0) {
        free(fps);
        return PyErr_NoMemory();
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *v = shpy_from_u64(fps[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    free(fps);
    return list;
}

/* Parse (hashes, blocks, distance) of find_all / find_clusters. Returns 0 or -1. */
static int shpy_match_args(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames, shpy_u64s *hs, unsigned *blocks,
                           unsigned *distance)
{
    long b, d;

    memset(hs, 0, sizeof(*hs));
    if (kwnames && PyTuple_GET_SIZE(kwnames) > 0) {
        PyErr_Format(PyExc_TypeError, "%s() takes positional arguments only "
                     "(hashes, blocks, distance)", fname);
        return -1;
    }
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s() takes 3 arguments (hashes, blocks, distance), "
                     "%zd given", fname, nargs);
        return -1;
    }
    if (shpy_int_range(args[1], "blocks", 1, 64, &b) < 0 ||
        shpy_int_range(args[2], "distance", 0, 63, &d) < 0)
        return -1;
    if (perm_table_count((unsigned)b, (unsigned)d) == 0) {
        char err[256];
        perm_set ps;
        if (perm_set_init(&ps, (unsigned)b, (unsigned)d, err, sizeof(err)) == 0) {
            perm_set_free(&ps);
            snprintf(err, sizeof(err), "bad setting blocks=%ld distance=%ld", b, d);
        }
        PyErr_Format(PyExc_ValueError, "%s", err);
        return -1;
    }
    *blocks = (unsigned)b;
    *distance = (unsigned)d;
    return shpy_u64s_get(args[0], "hashes", hs);
}

/* Raise for a failed match_* call: MemoryError or ValueError with its text. */
static PyObject *shpy_match_error(const char *err)
{
    if (strstr(err, "out of memory"))
        return PyErr_NoMemory();
    PyErr_SetString(PyExc_ValueError, err);
    return NULL;
}

PyDoc_STRVAR(shpy_find_all_doc,
"find_all(hashes, blocks, distance) -> list[tuple[int, int]]\n\n"
"Every pair of hashes within `distance` bits, exactly (no pair missed, none beyond\n"
"the distance), as (a, b) tuples with a <= b, sorted. A value given two or more\n"
"times gives the pair (a, a) once. blocks is the number of blocks the 64 bits are\n"
"split into (distance < blocks <= 64); the permutation tables are\n"
"C(blocks, blocks - distance). hashes: an iterable of ints or a buffer of uint64.\n"
"Runs on all cores with the GIL released.");

static PyObject *shpy_find_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    shpy_u64s hs;
    unsigned blocks, distance;
    match_pair *pairs = NULL;
    size_t npairs = 0;
    char err[256] = "";
    int rc;

    (void)self;
    if (shpy_match_args("find_all", args, nargs, kwnames, &hs, &blocks, &distance) < 0) {
        shpy_u64s_release(&hs);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = match_find_all(hs.v, hs.n, blocks, distance, 0, &pairs, &npairs, err, sizeof(err));
    Py_END_ALLOW_THREADS
    shpy_u64s_release(&hs);
    if (rc < 0)
        return shpy_match_error(err);
    PyObject *list = PyList_New((Py_ssize_t)npairs);
    for (size_t i = 0; list && i < npairs; i++) {
        PyObject *a = shpy_from_u64(pairs[i].a), *b = a ? shpy_from_u64(pairs[i].b) : NULL;
        PyObject *t = b ? PyTuple_New(2) : NULL;
        if (!t) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            Py_CLEAR(list);
            break;
        }
        PyTuple_SET_ITEM(t, 0, a);
        PyTuple_SET_ITEM(t, 1, b);
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    free(pairs);
    return list;
}

PyDoc_STRVAR(shpy_find_clusters_doc,
"find_clusters(hashes, blocks, distance) -> list[list[int]]\n\n"
"Connected components of the match graph (pairs within `distance` bits; a cluster\n"
"may chain: A~B~C with A and C further apart). Only components of two or more\n"
"input values are returned; each cluster is sorted ascending and keeps repeats,\n"
"clusters are sorted by their first value. Arguments as find_all.");

static PyObject *shpy_find_clusters(PyObject *self, PyObject *const *args,
                                    Py_ssize_t nargs, PyObject *kwnames)
{
    shpy_u64s hs;
    unsigned blocks, distance;
    uint64_t *values = NULL;
    size_t *offsets = NULL, nclusters = 0;
    char err[256] = "";
    int rc;

    (void)self;
    if (shpy_match_args("find_clusters", args, nargs, kwnames, &hs, &blocks,
                        &distance) < 0) {
        shpy_u64s_release(&hs);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = match_find_clusters(hs.v, hs.n, blocks, distance, 0, &values, &offsets,
                             &nclusters, err, sizeof(err));
    Py_END_ALLOW_THREADS
    shpy_u64s_release(&hs);
    if (rc < 0)
        return shpy_match_error(err);
    PyObject *list = PyList_New((Py_ssize_t)nclusters);
    for (size_t c = 0; list && c < nclusters; c++) {
        size_t lo = offsets[c], hi = offsets[c + 1];
        PyObject *cl = PyList_New((Py_ssize_t)(hi - lo));
        for (size_t i = lo; cl && i < hi; i++) {
            PyObject *v = shpy_from_u64(values[i]);
            if (!v)
                Py_CLEAR(cl);
            else
                PyList_SET_ITEM(cl, (Py_ssize_t)(i - lo), v);
        }
        if (!cl) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)c, cl);
    }
    free(values);
    free(offsets);
    return list;
}

/* ---- extract ---- */

static PyTypeObject shpy_extraction_type;

static PyStructSequence_Field shpy_extraction_fields[] = {
    {"text", "the text the fingerprint is taken from (blocks separated by '\\n')"},
    {"rule", "what chose it: 'article', 'article-relaxed', 'page', 'empty' or 'all-text'"},
    {"fingerprint", "its fingerprint: simhash.fingerprint(html, html=True, ...)"},
    {"algorithm", "the fingerprint algorithm, e.g. 'v5'"},
    {NULL, NULL},
};

static PyStructSequence_Desc shpy_extraction_desc = {
    "simhash.Extraction",
    "What an HTML page's fingerprint is taken from (extract()): a named tuple of text,\n"
    "rule, fingerprint, algorithm.",
    shpy_extraction_fields, 4,
};

PyDoc_STRVAR(shpy_extract_doc,
"extract(html, algorithm=None, all_text=False) -> Extraction\n\n"
"The text an HTML page's fingerprint is taken from, as `simhash extract --format\n"
"json` gives it: an Extraction, a named tuple of text (str: with 'v5' the page's\n"
"article, with 'v1' or all_text=True all its visible text; blocks separated by\n"
"'\\n'), rule ('article', 'article-relaxed', 'page', 'empty' or 'all-text'),\n"
"fingerprint (int: the same as fingerprint(html, html=True, algorithm=...,\n"
"all_text=...)) and algorithm\n"
"(str, e.g. 'v5'). html is str (encoded as UTF-8) or a bytes-like object of at most\n"
"64 MiB; algorithm as for fingerprint() (default 'v5'). ValueError when the page\n"
"cannot be read or is larger. The GIL is released while a large page is read.");

static PyObject *shpy_extract(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "html", "algorithm", "all_text", NULL };
    PyObject *html;
    const char *algo = NULL;
    int all_text = 0, has_view = 0;
    fp_params fpp = {FP_VERSION_DEFAULT, 0};
    char err[200], canon[32];
    const char *data;
    Py_ssize_t len;
    Py_buffer view;
    fp_extraction x;

    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|zp:extract", kwlist, &html, &algo, &all_text))
        return NULL;
    if (algo && fp_params_parse(algo, &fpp, err, sizeof err) != 0) {
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    if (shpy_text(html, "html", &data, &len, &view, &has_view) < 0)
        return NULL;
    PyThreadState *ts = len > SHPY_NOGIL_BYTES ? PyEval_SaveThread() : NULL;
    int rc = fp_html_extract(data, (size_t)len, &fpp, all_text ? FP_HTML_ALL_TEXT : 0, &x, err,
                             sizeof err);
    if (ts)
        PyEval_RestoreThread(ts);
    if (has_view)
        PyBuffer_Release(&view);
    if (rc != 0) {
        PyErr_Format(PyExc_ValueError, "cannot read the HTML: %s", err);
        return NULL;
    }
    fp_params_format(&fpp, canon, sizeof canon);
    PyObject *r = PyStructSequence_New(&shpy_extraction_type);
    /* the parser writes UTF-8; "replace" only guards the decoding */
    PyObject *t = r ? PyUnicode_DecodeUTF8(x.text, (Py_ssize_t)x.len, "replace") : NULL;
    PyObject *rule = t ? PyUnicode_FromString(x.rule) : NULL;
    PyObject *fp = rule ? shpy_from_u64(x.fp) : NULL;
    PyObject *alg = fp ? PyUnicode_FromString(canon) : NULL;
    fp_extraction_free(&x);
    if (alg == NULL) {
        Py_XDECREF(r);
        Py_XDECREF(t);
        Py_XDECREF(rule);
        Py_XDECREF(fp);
        return NULL;
    }
    PyStructSequence_SET_ITEM(r, 0, t);
    PyStructSequence_SET_ITEM(r, 1, rule);
    PyStructSequence_SET_ITEM(r, 2, fp);
    PyStructSequence_SET_ITEM(r, 3, alg);
    return r;
}

/* ---- Module ---- */

static PyMethodDef shpy_methods[] = {
    {"unsigned_hash", (PyCFunction)shpy_unsigned_hash, METH_O, shpy_unsigned_hash_doc},
    {"num_differing_bits", (PyCFunction)(void (*)(void))shpy_num_differing_bits,
     METH_FASTCALL, shpy_num_differing_bits_doc},
    {"compute", (PyCFunction)shpy_compute, METH_O, shpy_compute_doc},
    {"fingerprint", (PyCFunction)(void (*)(void))shpy_fingerprint,
     METH_VARARGS | METH_KEYWORDS, shpy_fingerprint_doc},
    {"extract", (PyCFunction)(void (*)(void))shpy_extract, METH_VARARGS | METH_KEYWORDS,
     shpy_extract_doc},
    {"find_all", (PyCFunction)(void (*)(void))shpy_find_all, METH_FASTCALL | METH_KEYWORDS,
     shpy_find_all_doc},
    {"find_clusters", (PyCFunction)(void (*)(void))shpy_find_clusters,
     METH_FASTCALL | METH_KEYWORDS, shpy_find_clusters_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(shpy_module_doc,
"The C core of the simhash package (import `simhash`, not this module).");

static struct PyModuleDef shpy_moduledef = {
    PyModuleDef_HEAD_INIT, "simhash._simhash", shpy_module_doc, -1, shpy_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__simhash(void);

PyMODINIT_FUNC PyInit__simhash(void)
{
    PyObject *m = PyModule_Create(&shpy_moduledef);
    if (!m)
        return NULL;
    shpy_module = m;
    if (PyModule_AddIntConstant(m, "WINDOW_DEFAULT", FP_WINDOW_DEFAULT) < 0 ||
        PyModule_AddIntConstant(m, "WINDOW_MAX", FP_WINDOW_MAX) < 0 ||
        PyModule_AddStringConstant(m, "__version__", SIMHASH_VERSION) < 0 ||
        PyStructSequence_InitType2(&shpy_extraction_type, &shpy_extraction_desc) < 0 ||
        PyModule_AddObjectRef(m, "Extraction", (PyObject *)&shpy_extraction_type) < 0 ||
        shpy_corpus_register(m) < 0 || shpy_client_register(m, &shpy_the_state) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
