/* shpy_corpus.c: simhash.Corpus, the in-memory corpus of common/core/corpus.h as a
 * Python type with the simhash-py method names (insert, remove, find_first, find_all
 * and their _bulk forms, len(), `in`).
 *
 * Locking: the GIL is released during bulk calls, so each Corpus has a read-write
 * lock of its own (corpus.h: one writer, or any number of readers). A call takes it
 * only after releasing the GIL, or with try-lock while holding it, so a thread that
 * holds the lock never waits for the GIL: no deadlock. The bulk queries split their
 * queries over the machine's cores (readers in parallel under one read lock). */
#include "shpy.h"

#include "corpus.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct shpy_corpus {
    PyObject_HEAD
    corpus *c;
    pthread_rwlock_t lock;
    int lock_ok;              /* lock initialised */
} shpy_corpus;

/* ---- Locking ---- */

/* Lock for writing (wr) or reading. nogil: release the GIL first and keep it
 * released (the returned state is given to shpy_corpus_unlock); otherwise the GIL is
 * held on return (NULL returned). */
static PyThreadState *shpy_corpus_lock(shpy_corpus *self, int wr, int nogil)
{
    PyThreadState *ts;

    if (!nogil) {
        if ((wr ? pthread_rwlock_trywrlock(&self->lock)
                : pthread_rwlock_tryrdlock(&self->lock)) == 0)
            return NULL;
    }
    ts = PyEval_SaveThread();
    if (wr)
        pthread_rwlock_wrlock(&self->lock);
    else
        pthread_rwlock_rdlock(&self->lock);
    if (nogil)
        return ts;
    PyEval_RestoreThread(ts);
    return NULL;
}

static void shpy_corpus_unlock(shpy_corpus *self, PyThreadState *ts)
{
    pthread_rwlock_unlock(&self->lock);
    if (ts)
        PyEval_RestoreThread(ts);
}

/* ---- Parallel queries ---- */

typedef void (*shpy_range_fn)(void *arg, size_t lo, size_t hi, unsigned part);

typedef struct shpy_part {
    shpy_range_fn fn;
    void *arg;
    size_t lo, hi;
    unsigned part;
} shpy_part;

static void *shpy_part_main(void *p)
{
    shpy_part *w = p;
    w->fn(w->arg, w->lo, w->hi, w->part);
    return NULL;
}

#define SHPY_MAX_PARTS 16

/* How many parts shpy_parallel splits n items into (1 for small inputs). */
static unsigned shpy_nparts(size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = n / 4096 + 1;

    if (cpus < 1)
        cpus = 1;
    if (k > (size_t)cpus)
        k = (size_t)cpus;
    return k > SHPY_MAX_PARTS ? SHPY_MAX_PARTS : (unsigned)k;
}

/* Run fn over [0, n) split into nparts contiguous ranges, one thread each (part 0 on
 * the calling thread; a thread that cannot be started runs on the caller too). No
 * Python calls: runs with the GIL released. */
static void shpy_parallel(size_t n, unsigned nparts, shpy_range_fn fn, void *arg)
{
    shpy_part parts[SHPY_MAX_PARTS];
    pthread_t tid[SHPY_MAX_PARTS];
    int started[SHPY_MAX_PARTS] = {0};

    for (unsigned i = 0; i < nparts; i++) {
        parts[i] = (shpy_part){ fn, arg, n * i / nparts, n * (i + 1) / nparts, i };
        if (i > 0)
            started[i] = pthread_create(&tid[i], NULL, shpy_part_main, &parts[i]) == 0;
    }
    for (unsigned i = 0; i < nparts; i++)
        if (!started[i])
            shpy_part_main(&parts[i]);
    for (unsigned i = 1; i < nparts; i++)
        if (started[i])
            pthread_join(tid[i], NULL);
}

/* ---- Arguments ---- */

/* The distance argument of a query: None (or absent) is the corpus distance. Returns
 * 0 or -1 with ValueError when it exceeds the corpus distance. */
static int shpy_corpus_dist(shpy_corpus *self, PyObject *o, unsigned *d)
{
    long v;

    *d = corpus_distance(self->c);
    if (!o || o == Py_None)
        return 0;
    if (shpy_int_range(o, "distance", 0, 64, &v) < 0)
        return -1;
    if ((unsigned long)v > *d) {
        PyErr_Format(PyExc_ValueError, "distance %ld exceeds the corpus distance %u", v, *d);
        return -1;
    }
    *d = (unsigned)v;
    return 0;
}

/* Parse (x, distance=None) of the query methods. */
static int shpy_corpus_qargs(shpy_corpus *self, const char *fname, PyObject *args,
                             PyObject *kw, PyObject **x, unsigned *d)
{
    static char *kwlist[] = { "query", "distance", NULL };
    PyObject *dobj = NULL;
    char fmt[64];

    snprintf(fmt, sizeof(fmt), "O|O:%s", fname);
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, x, &dobj))
        return -1;
    return shpy_corpus_dist(self, dobj, d);
}

/* ---- Life cycle ---- */

static PyObject *shpy_corpus_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "blocks", "distance", NULL };
    PyObject *bo, *dobj;
    long b, d;
    char err[256] = "";

    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:Corpus", kwlist, &bo, &dobj))
        return NULL;
    if (shpy_int_range(bo, "blocks", 1, 64, &b) < 0 ||
        shpy_int_range(dobj, "distance", 0, 63, &d) < 0)
        return NULL;
    corpus *c = corpus_new((unsigned)b, (unsigned)d, err, sizeof(err));
    if (!c) {
        if (strstr(err, "out of memory"))
            return PyErr_NoMemory();
        PyErr_SetString(PyExc_ValueError, err);
        return NULL;
    }
    shpy_corpus *self = (shpy_corpus *)type->tp_alloc(type, 0);
    if (!self) {
        corpus_free(c);
        return NULL;
    }
    if (pthread_rwlock_init(&self->lock, NULL) != 0) {
        corpus_free(c);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->lock_ok = 1;
    self->c = c;
    return (PyObject *)self;
}

static void shpy_corpus_dealloc(shpy_corpus *self)
{
    corpus_free(self->c);
    if (self->lock_ok)
        pthread_rwlock_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *shpy_corpus_repr(shpy_corpus *self)
{
    return PyUnicode_FromFormat("<simhash.Corpus blocks=%u distance=%u size=%zu>",
                                corpus_blocks(self->c), corpus_distance(self->c),
                                corpus_size(self->c));
}

/* ---- Single items ---- */

static PyObject *shpy_corpus_insert(shpy_corpus *self, PyObject *arg)
{
    uint64_t h;
    if (shpy_u64(arg, "hash", &h) < 0)
        return NULL;
    PyThreadState *ts = shpy_corpus_lock(self, 1, 0);
    int r = corpus_insert(self->c, h);
    shpy_corpus_unlock(self, ts);
    if (r < 0)
        return PyErr_NoMemory();
    return PyBool_FromLong(r);
}

static PyObject *shpy_corpus_remove(shpy_corpus *self, PyObject *arg)
{
    uint64_t h;
    if (shpy_u64(arg, "hash", &h) < 0)
        return NULL;
    PyThreadState *ts = shpy_corpus_lock(self, 1, 0);
    int r = corpus_remove(self->c, h);
    shpy_corpus_unlock(self, ts);
    return PyBool_FromLong(r);
}

static PyObject *shpy_corpus_find_first(shpy_corpus *self, PyObject *args, PyObject *kw)
{
    PyObject *x;
    unsigned d;
    uint64_t q, found = 0;

    if (shpy_corpus_qargs(self, "find_first", args, kw, &x, &d) < 0 ||
        shpy_u64(x, "query", &q) < 0)
        return NULL;
    PyThreadState *ts = shpy_corpus_lock(self, 0, 0);
    int r = corpus_find_first(self->c, q, d, &found);
    shpy_corpus_unlock(self, ts);
    if (r <= 0)
        Py_RETURN_NONE;
    return shpy_from_u64(found);
}

/* A list of n Python ints. */
static PyObject *shpy_list_u64(const uint64_t *v, size_t n)
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = shpy_from_u64(v[i]);
        if (!o) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}

static PyObject *shpy_corpus_find_all(shpy_corpus *self, PyObject *args, PyObject *kw)
{
    PyObject *x;
    unsigned d;
    uint64_t q, *out = NULL;

    if (shpy_corpus_qargs(self, "find_all", args, kw, &x, &d) < 0 ||
        shpy_u64(x, "query", &q) < 0)
        return NULL;
    PyThreadState *ts = shpy_corpus_lock(self, 0, 0);
    long r = corpus_find_all(self->c, q, d, &out);
    shpy_corpus_unlock(self, ts);
    if (r < 0)
        return PyErr_NoMemory();      /* d was checked: only memory can fail */
    PyObject *list = shpy_list_u64(out, (size_t)r);
    free(out);
    return list;
}

/* ---- Bulk forms ---- */

/* insert_bulk (wr 1, insert) and remove_bulk (insert 0). */
static PyObject *shpy_corpus_update_bulk(shpy_corpus *self, PyObject *arg, int insert)
{
    shpy_u64s hs;
    long r;

    if (shpy_u64s_get(arg, "hashes", &hs) < 0) {
        shpy_u64s_release(&hs);
        return NULL;
    }
    PyThreadState *ts = shpy_corpus_lock(self, 1, hs.n > SHPY_NOGIL_ITEMS);
    r = insert ? corpus_insert_many(self->c, hs.v, hs.n)
               : corpus_remove_many(self->c, hs.v, hs.n);
    shpy_corpus_unlock(self, ts);
    shpy_u64s_release(&hs);
    if (r < 0)
        return PyErr_NoMemory();
    return PyLong_FromLong(r);
}

static PyObject *shpy_corpus_insert_bulk(shpy_corpus *self, PyObject *arg)
{
    return shpy_corpus_update_bulk(self, arg, 1);
}

static PyObject *shpy_corpus_remove_bulk(shpy_corpus *self, PyObject *arg)
{
    return shpy_corpus_update_bulk(self, arg, 0);
}

/* find_first_bulk: the work of one part. */
typedef struct shpy_ff_job {
    const corpus *c;
    const uint64_t *qs;
    unsigned d;
    uint8_t *found;
    uint64_t *first;
} shpy_ff_job;

static void shpy_ff_part(void *arg, size_t lo, size_t hi, unsigned part)
{
    shpy_ff_job *j = arg;
    (void)part;
    corpus_find_first_many(j->c, j->qs + lo, hi - lo, j->d, j->found + lo, j->first + lo);
}

static PyObject *shpy_corpus_find_first_bulk(shpy_corpus *self, PyObject *args,
                                             PyObject *kw)
{
    PyObject *x, *list = NULL;
    unsigned d;
    shpy_u64s qs;

    memset(&qs, 0, sizeof(qs));
    if (shpy_corpus_qargs(self, "find_first_bulk", args, kw, &x, &d) < 0 ||
        shpy_u64s_get(x, "queries", &qs) < 0)
        goto out;
    shpy_ff_job j = { self->c, qs.v, d, malloc(qs.n + 1), malloc((qs.n + 1) * 8) };
    if (!j.found || !j.first) {
        free(j.found);
        free(j.first);
        PyErr_NoMemory();
        goto out;
    }
    unsigned nparts = shpy_nparts(qs.n);
    PyThreadState *ts = shpy_corpus_lock(self, 0, qs.n > SHPY_NOGIL_ITEMS);
    if (ts)
        shpy_parallel(qs.n, nparts, shpy_ff_part, &j);
    else
        shpy_ff_part(&j, 0, qs.n, 0);
    shpy_corpus_unlock(self, ts);
    list = PyList_New((Py_ssize_t)qs.n);
    for (size_t i = 0; list && i < qs.n; i++) {
        PyObject *o;
        if (j.found[i]) {
            o = shpy_from_u64(j.first[i]);
            if (!o) {
                Py_CLEAR(list);
                break;
            }
        } else {
            o = Py_NewRef(Py_None);
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    free(j.found);
    free(j.first);
out:
    shpy_u64s_release(&qs);
    return list;
}

/* find_all_bulk: the results of one part, appended to one array per part; counts[i]
 * is the number of results of query i (-1: out of memory). */
typedef struct shpy_fa_out {
    uint64_t *v;
    size_t n, cap;
    int oom;
} shpy_fa_out;

typedef struct shpy_fa_job {
    const corpus *c;
    const uint64_t *qs;
    unsigned d;
    long *counts;
    shpy_fa_out out[SHPY_MAX_PARTS];
} shpy_fa_job;

static void shpy_fa_part(void *arg, size_t lo, size_t hi, unsigned part)
{
    shpy_fa_job *j = arg;
    shpy_fa_out *o = &j->out[part];
    uint64_t *v = NULL;

    /* the batched search visits the tables in the order of the queries' permuted
     * values: the same results as corpus_find_all one query at a time */
    long total = corpus_find_all_many(j->c, j->qs + lo, hi - lo, j->d, j->counts + lo, &v);
    if (total < 0) {
        o->oom = 1;
        return;
    }
    o->v = v;
    o->n = o->cap = (size_t)total;
}

static PyObject *shpy_corpus_find_all_bulk(shpy_corpus *self, PyObject *args, PyObject *kw)
{
    PyObject *x, *list = NULL;
    unsigned d;
    shpy_u64s qs;
    shpy_fa_job j;

    memset(&qs, 0, sizeof(qs));
    memset(&j, 0, sizeof(j));
    if (shpy_corpus_qargs(self, "find_all_bulk", args, kw, &x, &d) < 0 ||
        shpy_u64s_get(x, "queries", &qs) < 0)
        goto out;
    j.c = self->c;
    j.qs = qs.v;
    j.d = d;
    j.counts = malloc((qs.n + 1) * sizeof(*j.counts));
    if (!j.counts) {
        PyErr_NoMemory();
        goto out;
    }
    unsigned nparts = shpy_nparts(qs.n);
    PyThreadState *ts = shpy_corpus_lock(self, 0, qs.n > SHPY_NOGIL_ITEMS);
    if (ts)
        shpy_parallel(qs.n, nparts, shpy_fa_part, &j);
    else
        shpy_fa_part(&j, 0, qs.n, 0), nparts = 1;
    shpy_corpus_unlock(self, ts);
    for (unsigned p = 0; p < nparts; p++) {
        if (j.out[p].oom) {
            PyErr_NoMemory();
            goto out;
        }
    }
    list = PyList_New((Py_ssize_t)qs.n);
    size_t off = 0;
    unsigned part = 0;
    for (size_t i = 0; list && i < qs.n; i++) {
        while (i >= qs.n * (part + 1) / nparts) {   /* the part that holds query i */
            part++;
            off = 0;
        }
        PyObject *l = shpy_list_u64(j.out[part].v + off, (size_t)j.counts[i]);
        if (!l) {
            Py_CLEAR(list);
            break;
        }
        off += (size_t)j.counts[i];
        PyList_SET_ITEM(list, (Py_ssize_t)i, l);
    }
out:
    for (unsigned p = 0; p < SHPY_MAX_PARTS; p++)
        free(j.out[p].v);
    free(j.counts);
    shpy_u64s_release(&qs);
    return list;
}

/* ---- Protocols and attributes ---- */

static Py_ssize_t shpy_corpus_len(shpy_corpus *self)
{
    PyThreadState *ts = shpy_corpus_lock(self, 0, 0);
    size_t n = corpus_size(self->c);
    shpy_corpus_unlock(self, ts);
    return (Py_ssize_t)n;
}

static int shpy_corpus_contains(shpy_corpus *self, PyObject *x)
{
    uint64_t h;

    if (shpy_u64(x, "hash", &h) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();               /* an int out of range is simply not there */
        return 0;
    }
    PyThreadState *ts = shpy_corpus_lock(self, 0, 0);
    int r = corpus_contains(self->c, h);
    shpy_corpus_unlock(self, ts);
    return r;
}

static PyObject *shpy_corpus_get_blocks(shpy_corpus *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(corpus_blocks(self->c));
}

static PyObject *shpy_corpus_get_distance(shpy_corpus *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(corpus_distance(self->c));
}

static PyGetSetDef shpy_corpus_getset[] = {
    {"blocks", (getter)shpy_corpus_get_blocks, NULL,
     "Number of blocks the 64 bits are split into.", NULL},
    {"distance", (getter)shpy_corpus_get_distance, NULL,
     "Largest Hamming distance a query can ask for (the default of every query).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef shpy_corpus_methods[] = {
    {"insert", (PyCFunction)shpy_corpus_insert, METH_O,
     "insert(hash) -> bool\n\nAdd a fingerprint; True when it was not there yet."},
    {"remove", (PyCFunction)shpy_corpus_remove, METH_O,
     "remove(hash) -> bool\n\nRemove a fingerprint; True when it was there."},
    {"find_first", (PyCFunction)(void (*)(void))shpy_corpus_find_first,
     METH_VARARGS | METH_KEYWORDS,
     "find_first(query, distance=None) -> int | None\n\n"
     "Some stored fingerprint within distance bits of query (the query itself when\n"
     "stored), or None. distance defaults to the corpus distance and may not exceed it."},
    {"find_all", (PyCFunction)(void (*)(void))shpy_corpus_find_all,
     METH_VARARGS | METH_KEYWORDS,
     "find_all(query, distance=None) -> list[int]\n\n"
     "Every stored fingerprint within distance bits of query, each once, nearest\n"
     "first, then by value."},
    {"insert_bulk", (PyCFunction)shpy_corpus_insert_bulk, METH_O,
     "insert_bulk(hashes) -> int\n\n"
     "Insert many fingerprints (an iterable of ints or a buffer of uint64); returns\n"
     "how many were new. The GIL is released while the corpus is updated."},
    {"remove_bulk", (PyCFunction)shpy_corpus_remove_bulk, METH_O,
     "remove_bulk(hashes) -> int\n\nRemove many fingerprints; returns how many were there."},
    {"find_first_bulk", (PyCFunction)(void (*)(void))shpy_corpus_find_first_bulk,
     METH_VARARGS | METH_KEYWORDS,
     "find_first_bulk(queries, distance=None) -> list[int | None]\n\n"
     "find_first of every query, in order; runs on all cores with the GIL released."},
    {"find_all_bulk", (PyCFunction)(void (*)(void))shpy_corpus_find_all_bulk,
     METH_VARARGS | METH_KEYWORDS,
     "find_all_bulk(queries, distance=None) -> list[list[int]]\n\n"
     "find_all of every query, in order; runs on all cores with the GIL released."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods shpy_corpus_seq = {
    .sq_length = (lenfunc)shpy_corpus_len,
    .sq_contains = (objobjproc)shpy_corpus_contains,
};

PyDoc_STRVAR(shpy_corpus_doc,
"Corpus(blocks, distance)\n\n"
"An in-memory set of 64-bit fingerprints with exact near-duplicate lookup: every\n"
"stored fingerprint within `distance` bits of a query is found, none further. The\n"
"64 bits are split into `blocks` blocks (distance < blocks <= 64); the corpus keeps\n"
"C(blocks, blocks - distance) permuted tables. len(corpus) is the number stored,\n"
"`h in corpus` tells whether h is. Safe to share between threads (calls on one\n"
"corpus are serialised; the bulk queries run on all cores).");

static PyTypeObject shpy_corpus_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simhash.Corpus",
    .tp_basicsize = sizeof(shpy_corpus),
    .tp_dealloc = (destructor)shpy_corpus_dealloc,
    .tp_repr = (reprfunc)shpy_corpus_repr,
    .tp_as_sequence = &shpy_corpus_seq,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = shpy_corpus_doc,
    .tp_methods = shpy_corpus_methods,
    .tp_getset = shpy_corpus_getset,
    .tp_new = shpy_corpus_new,
};

int shpy_corpus_register(PyObject *m)
{
    if (PyType_Ready(&shpy_corpus_type) < 0)
        return -1;
    Py_INCREF(&shpy_corpus_type);
    if (PyModule_AddObject(m, "Corpus", (PyObject *)&shpy_corpus_type) < 0) {
        Py_DECREF(&shpy_corpus_type);
        return -1;
    }
    return 0;
}
