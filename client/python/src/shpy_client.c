/* shpy_client.c: simhash.Client, a connection to simhash-coordinator over the
 * project's C client library (client/include/simhash/client.h), and the exception
 * types of its errors.
 *
 * Every network call runs with the GIL released. A handle is one connection and not
 * thread-safe, so each Client has a lock, taken after the GIL is released (a thread
 * holding it never waits for the GIL); the error text is copied under the lock.
 * Document ids go out as UTF-8 (str, with surrogateescape so that any bytes round
 * trip) or as bytes, and come back as str decoded the same way. */
#include "shpy.h"

#include "simhash/client.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct shpy_client {
    PyObject_HEAD
    shc_client *c;            /* NULL once closed */
    PyThread_type_lock lock;
    PyObject *host;
    int port;
} shpy_client;

/* What a call leaves for raising after the lock is released. */
typedef struct shpy_call {
    shc_status st;
    int closed;               /* the client was closed: nothing was called */
    char err[SHC_ERRSTR_MAX];
} shpy_call;

/* ---- Errors ---- */

/* Raise the exception of a failed call: ClientError subclasses for the server and
 * the connection, ValueError for a bad argument, MemoryError. Returns NULL. */
static PyObject *shpy_client_raise(const shpy_call *k)
{
    shpy_state *s = shpy_get_state();
    PyObject *type;

    if (k->closed) {
        PyErr_SetString(s->client_error, "the client is closed");
        return NULL;
    }
    switch (k->st) {
    case SHC_ERR_SERVER: type = s->server_error; break;
    case SHC_ERR_IO: type = s->io_error; break;
    case SHC_ERR_TIMEOUT: type = s->timeout_error; break;
    case SHC_ERR_PROTOCOL: type = s->protocol_error; break;
    case SHC_ERR_ARG:
        PyErr_SetString(PyExc_ValueError, k->err[0] ? k->err : "bad argument");
        return NULL;
    case SHC_ERR_NOMEM:
        return PyErr_NoMemory();
    default: type = s->client_error; break;
    }
    PyObject *msg = PyUnicode_DecodeUTF8(k->err, (Py_ssize_t)strlen(k->err), "replace");
    PyObject *exc = msg ? PyObject_CallOneArg(type, msg) : NULL;
    Py_XDECREF(msg);
    if (!exc)
        return NULL;
    PyObject *name = PyUnicode_FromString(shc_status_name(k->st));
    if (!name || PyObject_SetAttrString(exc, "status", name) < 0) {
        Py_XDECREF(name);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(name);
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

/* Begin a call: release the GIL, take the client's lock. Returns the thread state
 * for shpy_client_end; k->closed is set when the client was closed. */
static PyThreadState *shpy_client_begin(shpy_client *self, shpy_call *k)
{
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    k->st = SHC_OK;
    k->err[0] = '\0';
    k->closed = self->c == NULL;
    return ts;
}

/* End a call: copy the error text (when k->st failed), unlock, take the GIL back.
 * Returns 0 on success, -1 when the caller must raise with shpy_client_raise. */
static int shpy_client_end(shpy_client *self, shpy_call *k, PyThreadState *ts)
{
    if (!k->closed && k->st != SHC_OK)
        snprintf(k->err, sizeof(k->err), "%s", shc_errstr(self->c));
    PyThread_release_lock(self->lock);
    PyEval_RestoreThread(ts);
    return k->closed || k->st != SHC_OK ? -1 : 0;
}

/* ---- Arguments and results ---- */

/* A document id as a bytes object (new reference): str encoded as UTF-8 with
 * surrogateescape, or bytes as they are; 1..SHC_DOCID_MAX bytes, no NUL. */
static PyObject *shpy_docid(PyObject *o, const char *what)
{
    PyObject *b;

    if (PyUnicode_Check(o)) {
        b = PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape");
        if (!b)
            return NULL;
    } else if (PyBytes_Check(o)) {
        b = Py_NewRef(o);
    } else {
        PyErr_Format(PyExc_TypeError, "%s must be str or bytes, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    if (n == 0 || n > SHC_DOCID_MAX) {
        PyErr_Format(PyExc_ValueError, "%s must be 1..%d bytes, got %zd", what,
                     SHC_DOCID_MAX, n);
        Py_DECREF(b);
        return NULL;
    }
    if (memchr(PyBytes_AS_STRING(b), '\0', (size_t)n)) {
        PyErr_Format(PyExc_ValueError, "%s contains a NUL byte", what);
        Py_DECREF(b);
        return NULL;
    }
    return b;
}

/* distance None -> -1 (the corpus distance), else 0..64. */
static int shpy_client_dist(PyObject *o, int *d)
{
    long v;
    *d = -1;
    if (!o || o == Py_None)
        return 0;
    if (shpy_int_range(o, "distance", 0, 64, &v) < 0)
        return -1;
    *d = (int)v;
    return 0;
}

/* The Python form of a result: a list of (fp, distance, [docid, ...]). */
static PyObject *shpy_result(const shc_result *r)
{
    PyObject *list = PyList_New(r ? (Py_ssize_t)r->nmatches : 0);
    for (size_t i = 0; list && r && i < r->nmatches; i++) {
        const shc_match *m = &r->matches[i];
        PyObject *ids = PyList_New((Py_ssize_t)m->ndocids);
        for (size_t k = 0; ids && k < m->ndocids; k++) {
            PyObject *s = PyUnicode_DecodeUTF8(m->docids[k], (Py_ssize_t)m->docid_lens[k],
                                               "surrogateescape");
            if (!s)
                Py_CLEAR(ids);
            else
                PyList_SET_ITEM(ids, (Py_ssize_t)k, s);
        }
        PyObject *t = ids ? Py_BuildValue("(NIN)", shpy_from_u64(m->fp), m->distance, ids)
                          : NULL;
        if (!t) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, t);
    }
    return list;
}

/* ---- Life cycle ---- */

static PyObject *shpy_client_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "host", "port", "timeout", "password", NULL };
    const char *host = "127.0.0.1", *password = NULL;
    PyObject *pobj = NULL, *tobj = NULL, *pwobj = Py_None, *pwb = NULL;
    long port = 7000;
    int timeout_ms = 5000;
    shpy_call k;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|sOOO:Client", kwlist, &host, &pobj, &tobj,
                                     &pwobj))
        return NULL;
    if (pobj && shpy_int_range(pobj, "port", 1, 65535, &port) < 0)
        return NULL;
    if (tobj && tobj != Py_None) {
        double t = PyFloat_AsDouble(tobj);
        if (t == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(t >= 0) || t * 1000.0 > 2147483647.0) {
            PyErr_Format(PyExc_ValueError, "timeout must be None or 0..2147483 seconds, "
                         "got %R", tobj);
            return NULL;
        }
        timeout_ms = (int)ceil(t * 1000.0);
    } else if (tobj == Py_None) {
        timeout_ms = 0;
    }
    if (pwobj != Py_None) {
        if (!(pwb = shpy_docid(pwobj, "password")))
            return NULL;
        password = PyBytes_AS_STRING(pwb);
    }
    shpy_client *self = (shpy_client *)type->tp_alloc(type, 0);
    if (!self) {
        Py_XDECREF(pwb);
        return NULL;
    }
    self->port = (int)port;
    self->host = PyUnicode_FromString(host);
    self->lock = PyThread_allocate_lock();
    if (!self->host || !self->lock) {
        Py_XDECREF(pwb);
        Py_DECREF(self);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    shc_client *c = NULL;
    Py_BEGIN_ALLOW_THREADS
    k.st = shc_connect(host, (int)port, timeout_ms, password, &c);
    if (k.st != SHC_OK)
        snprintf(k.err, sizeof(k.err), "%s", c ? shc_errstr(c) : "out of memory");
    Py_END_ALLOW_THREADS
    Py_XDECREF(pwb);
    k.closed = 0;
    if (k.st != SHC_OK) {
        shc_free(c);
        Py_DECREF(self);
        return shpy_client_raise(&k);
    }
    self->c = c;
    return (PyObject *)self;
}

static void shpy_client_dealloc(shpy_client *self)
{
    if (self->c) {
        shc_client *c = self->c;
        self->c = NULL;
        Py_BEGIN_ALLOW_THREADS
        shc_free(c);
        Py_END_ALLOW_THREADS
    }
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_XDECREF(self->host);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *shpy_client_close(shpy_client *self, PyObject *unused)
{
    shpy_call k;
    (void)unused;
    PyThreadState *ts = shpy_client_begin(self, &k);
    shc_free(self->c);
    self->c = NULL;
    PyThread_release_lock(self->lock);
    PyEval_RestoreThread(ts);
    Py_RETURN_NONE;
}

static PyObject *shpy_client_enter(shpy_client *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef((PyObject *)self);
}

static PyObject *shpy_client_exit(shpy_client *self, PyObject *args)
{
    (void)args;
    PyObject *r = shpy_client_close(self, NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static PyObject *shpy_client_reconnect(shpy_client *self, PyObject *unused)
{
    shpy_call k;
    (void)unused;
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_reconnect(self->c);
    if (shpy_client_end(self, &k, ts) < 0)
        return shpy_client_raise(&k);
    Py_RETURN_NONE;
}

/* ---- Commands ---- */

static PyObject *shpy_client_add(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "fp", "docid", NULL };
    PyObject *fo, *dobj, *db;
    uint64_t fp;
    long long added = 0;
    shpy_call k;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:add", kwlist, &fo, &dobj) ||
        shpy_u64(fo, "fp", &fp) < 0 || !(db = shpy_docid(dobj, "docid")))
        return NULL;
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_add(self->c, fp, PyBytes_AS_STRING(db), &added);
    int rc = shpy_client_end(self, &k, ts);
    Py_DECREF(db);
    if (rc < 0)
        return shpy_client_raise(&k);
    return PyBool_FromLong(added > 0);
}

static PyObject *shpy_client_delete(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "fp", "docid", NULL };
    PyObject *fo, *dobj = Py_None, *db = NULL;
    uint64_t fp;
    long long removed = 0;
    shpy_call k;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:delete", kwlist, &fo, &dobj) ||
        shpy_u64(fo, "fp", &fp) < 0)
        return NULL;
    if (dobj != Py_None && !(db = shpy_docid(dobj, "docid")))
        return NULL;
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_del(self->c, fp, db ? PyBytes_AS_STRING(db) : NULL, &removed);
    int rc = shpy_client_end(self, &k, ts);
    Py_XDECREF(db);
    if (rc < 0)
        return shpy_client_raise(&k);
    return PyLong_FromLongLong(removed);
}

static PyObject *shpy_client_query(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "fp", "distance", "limit", NULL };
    PyObject *fo, *dobj = Py_None, *lobj = NULL;
    uint64_t fp;
    int d;
    long limit = 0;
    shc_result *r = NULL;
    shpy_call k;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:query", kwlist, &fo, &dobj, &lobj) ||
        shpy_u64(fo, "fp", &fp) < 0 || shpy_client_dist(dobj, &d) < 0 ||
        (lobj && shpy_int_range(lobj, "limit", 0, 1000000000L, &limit) < 0))
        return NULL;
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_query(self->c, fp, d, (size_t)limit, &r);
    if (shpy_client_end(self, &k, ts) < 0)
        return shpy_client_raise(&k);
    PyObject *res = shpy_result(r);
    shc_result_free(r);
    return res;
}

static PyObject *shpy_client_check(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "fp", "docid", "distance", NULL };
    PyObject *fo, *dobj, *distobj = Py_None, *db;
    uint64_t fp;
    int d;
    shc_result *r = NULL;
    shpy_call k;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:check", kwlist, &fo, &dobj, &distobj) ||
        shpy_u64(fo, "fp", &fp) < 0 || shpy_client_dist(distobj, &d) < 0 ||
        !(db = shpy_docid(dobj, "docid")))
        return NULL;
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_check(self->c, fp, PyBytes_AS_STRING(db), d, &r);
    int rc = shpy_client_end(self, &k, ts);
    Py_DECREF(db);
    if (rc < 0)
        return shpy_client_raise(&k);
    PyObject *res = shpy_result(r);
    shc_result_free(r);
    return res;
}

/* "text", "html" or "html-all": SHC_FORMAT_*, or -1 with ValueError set. */
static int shpy_format(const char *format)
{
    if (strcmp(format, "text") == 0)
        return SHC_FORMAT_TEXT;
    if (strcmp(format, "html") == 0)
        return SHC_FORMAT_HTML;
    if (strcmp(format, "html-all") == 0)
        return SHC_FORMAT_HTML_ALL;
    PyErr_Format(PyExc_ValueError, "format must be 'text', 'html' or 'html-all', not '%.40s'",
                 format);
    return -1;
}

static PyObject *shpy_client_check_text(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "docid", "text", "format", "distance", NULL };
    PyObject *dobj, *tobj, *db, *dist_obj = NULL;
    const char *text, *format = "text";
    long distance = -1;
    Py_ssize_t len;
    Py_buffer view;
    int has_view;
    uint64_t fp = 0;
    shc_result *r = NULL;
    shpy_call k;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sO:check_text", kwlist, &dobj, &tobj,
                                     &format, &dist_obj))
        return NULL;
    int fmt = shpy_format(format);
    if (fmt < 0 || (dist_obj && dist_obj != Py_None &&
                    shpy_int_range(dist_obj, "distance", 0, 64, &distance) < 0))
        return NULL;
    if (!(db = shpy_docid(dobj, "docid")))
        return NULL;
    if (shpy_text(tobj, "text", &text, &len, &view, &has_view) < 0) {
        Py_DECREF(db);
        return NULL;
    }
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_check_text_as(self->c, PyBytes_AS_STRING(db), text, (size_t)len, fmt,
                                 (int)distance, &fp, &r);
    int rc = shpy_client_end(self, &k, ts);
    Py_DECREF(db);
    if (has_view)
        PyBuffer_Release(&view);
    if (rc < 0)
        return shpy_client_raise(&k);
    PyObject *res = shpy_result(r);
    shc_result_free(r);
    return res ? Py_BuildValue("(NN)", shpy_from_u64(fp), res) : NULL;
}

static PyObject *shpy_client_fingerprint(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "text", "format", NULL };
    PyObject *arg;
    const char *text, *format = "text";
    Py_ssize_t len;
    Py_buffer view;
    int has_view;
    uint64_t fp = 0;
    shpy_call k;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s:fingerprint", kwlist, &arg, &format))
        return NULL;
    int fmt = shpy_format(format);
    if (fmt < 0 || shpy_text(arg, "text", &text, &len, &view, &has_view) < 0)
        return NULL;
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_fingerprint_as(self->c, text, (size_t)len, fmt, &fp);
    int rc = shpy_client_end(self, &k, ts);
    if (has_view)
        PyBuffer_Release(&view);
    if (rc < 0)
        return shpy_client_raise(&k);
    return shpy_from_u64(fp);
}

/* add_many: (fps, docids) or an iterable of (fp, docid) pairs into parallel arrays;
 * *keep holds the docid bytes objects. Returns 0 or -1. */
static int shpy_add_many_args(PyObject *items, PyObject *docids, shpy_u64s *fps,
                              PyObject **keep)
{
    PyObject *seq = NULL;

    *keep = NULL;
    if (docids && docids != Py_None) {
        if (shpy_u64s_get(items, "fps", fps) < 0)
            return -1;
        seq = PySequence_Fast(docids, "docids must be a sequence of str or bytes");
        if (!seq)
            return -1;
        if ((size_t)PySequence_Fast_GET_SIZE(seq) != fps->n) {
            PyErr_Format(PyExc_ValueError, "%zu fingerprints but %zd document ids", fps->n,
                         PySequence_Fast_GET_SIZE(seq));
            Py_DECREF(seq);
            return -1;
        }
        *keep = PyList_New(PySequence_Fast_GET_SIZE(seq));
        for (Py_ssize_t i = 0; *keep && i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *b = shpy_docid(PySequence_Fast_GET_ITEM(seq, i), "docid");
            if (!b)
                Py_CLEAR(*keep);
            else
                PyList_SET_ITEM(*keep, i, b);
        }
        Py_DECREF(seq);
        return *keep ? 0 : -1;
    }
    seq = PySequence_Fast(items, "add_many() needs (fps, docids) or an iterable of "
                                 "(fp, docid) pairs");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    memset(fps, 0, sizeof(*fps));
    fps->owned = malloc((size_t)(n > 0 ? n : 1) * sizeof(*fps->owned));
    *keep = PyList_New(n);
    if (!fps->owned || !*keep) {
        Py_DECREF(seq);
        if (!fps->owned)
            PyErr_NoMemory();
        return -1;
    }
    fps->v = fps->owned;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i), *b;
        if (!PyTuple_Check(pair) && !PyList_Check(pair)) {
            PyErr_Format(PyExc_TypeError, "items[%zd] must be an (fp, docid) pair, not %.100s",
                         i, Py_TYPE(pair)->tp_name);
            break;
        }
        if (PySequence_Fast_GET_SIZE(pair) != 2) {
            PyErr_Format(PyExc_ValueError, "items[%zd] must be an (fp, docid) pair", i);
            break;
        }
        if (shpy_u64(PySequence_Fast_GET_ITEM(pair, 0), "fp", &fps->owned[i]) < 0 ||
            !(b = shpy_docid(PySequence_Fast_GET_ITEM(pair, 1), "docid")))
            break;
        PyList_SET_ITEM(*keep, i, b);
        fps->n = (size_t)i + 1;
    }
    Py_DECREF(seq);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *shpy_client_add_many(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "items", "docids", NULL };
    PyObject *items, *docids = NULL, *keep = NULL, *ret = NULL;
    shpy_u64s fps;
    const char **ids = NULL;
    shc_bulk_report rep;
    shpy_call k;

    memset(&fps, 0, sizeof(fps));
    memset(&rep, 0, sizeof(rep));
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:add_many", kwlist, &items, &docids) ||
        shpy_add_many_args(items, docids, &fps, &keep) < 0)
        goto out;
    ids = malloc((fps.n + 1) * sizeof(*ids));
    if (!ids) {
        PyErr_NoMemory();
        goto out;
    }
    for (size_t i = 0; i < fps.n; i++)
        ids[i] = PyBytes_AS_STRING(PyList_GET_ITEM(keep, (Py_ssize_t)i));
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_add_many(self->c, fps.v, ids, fps.n, NULL, &rep);
    if (shpy_client_end(self, &k, ts) < 0) {
        shpy_client_raise(&k);
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (ev && !k.closed && PyObject_IsInstance(ev, shpy_get_state()->client_error) == 1) {
            const char *names[4] = { "ok", "failed", "added", "first_failed" };
            long long vals[4] = { (long long)rep.ok, (long long)rep.failed, rep.added,
                                  (long long)rep.first_failed };
            for (int i = 0; i < 4; i++) {
                PyObject *v = PyLong_FromLongLong(vals[i]);
                if (v)
                    PyObject_SetAttrString(ev, names[i], v);
                Py_XDECREF(v);
            }
            PyErr_Clear();
        }
        PyErr_Restore(et, ev, tb);
        goto out;
    }
    ret = PyLong_FromLongLong(rep.added);
out:
    free(ids);
    Py_XDECREF(keep);
    shpy_u64s_release(&fps);
    return ret;
}

static PyObject *shpy_client_query_many(shpy_client *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "fps", "distance", "limit", NULL };
    PyObject *fo, *dobj = Py_None, *lobj = NULL, *ret = NULL;
    shpy_u64s fps;
    int d;
    long limit = 0;
    shc_result **res = NULL;
    shc_bulk_report rep;
    shpy_call k;

    memset(&fps, 0, sizeof(fps));
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:query_many", kwlist, &fo, &dobj,
                                     &lobj) ||
        shpy_client_dist(dobj, &d) < 0 ||
        (lobj && shpy_int_range(lobj, "limit", 0, 1000000000L, &limit) < 0) ||
        shpy_u64s_get(fo, "fps", &fps) < 0)
        goto out;
    res = calloc(fps.n + 1, sizeof(*res));
    if (!res) {
        PyErr_NoMemory();
        goto out;
    }
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_query_many(self->c, fps.v, fps.n, d, (size_t)limit, res, NULL, &rep);
    if (shpy_client_end(self, &k, ts) < 0) {
        shpy_client_raise(&k);
        goto out;
    }
    ret = PyList_New((Py_ssize_t)fps.n);
    for (size_t i = 0; ret && i < fps.n; i++) {
        PyObject *l = shpy_result(res[i]);
        if (!l)
            Py_CLEAR(ret);
        else
            PyList_SET_ITEM(ret, (Py_ssize_t)i, l);
    }
out:
    for (size_t i = 0; res && i < fps.n; i++)
        shc_result_free(res[i]);
    free(res);
    shpy_u64s_release(&fps);
    return ret;
}

/* A value of an INFO line: int when it is a decimal integer, else str. */
static PyObject *shpy_info_value(const char *v, size_t n)
{
    size_t i = (n > 0 && v[0] == '-') ? 1 : 0;
    int digits = i < n && n - i <= 18;
    for (size_t j = i; digits && j < n; j++)
        digits = v[j] >= '0' && v[j] <= '9';
    if (digits)
        return PyLong_FromString(v, NULL, 10);  /* stops at the line end: digits only */
    return PyUnicode_DecodeUTF8(v, (Py_ssize_t)n, "replace");
}

static PyObject *shpy_client_info(shpy_client *self, PyObject *unused)
{
    char *text = NULL;
    size_t len = 0;
    shpy_call k;

    (void)unused;
    PyThreadState *ts = shpy_client_begin(self, &k);
    if (!k.closed)
        k.st = shc_info(self->c, &text, &len);
    if (shpy_client_end(self, &k, ts) < 0)
        return shpy_client_raise(&k);
    PyObject *d = PyDict_New();
    const char *p = text, *end = text + len;
    while (d && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t l = (size_t)(le - p);
        if (l > 0 && p[l - 1] == '\r')
            l--;
        const char *colon = l > 0 && p[0] != '#' ? memchr(p, ':', l) : NULL;
        if (colon) {
            char vbuf[32];
            size_t vl = l - (size_t)(colon + 1 - p);
            PyObject *key = PyUnicode_DecodeUTF8(p, colon - p, "replace"), *val;
            if (vl < sizeof(vbuf)) {
                memcpy(vbuf, colon + 1, vl);
                vbuf[vl] = '\0';
                val = shpy_info_value(vbuf, vl);
            } else {
                val = PyUnicode_DecodeUTF8(colon + 1, (Py_ssize_t)vl, "replace");
            }
            if (!key || !val || PyDict_SetItem(d, key, val) < 0)
                Py_CLEAR(d);
            Py_XDECREF(key);
            Py_XDECREF(val);
        }
        p = le + (nl ? 1 : 0);
    }
    free(text);
    return d;
}

static PyObject *shpy_client_get_closed(shpy_client *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->c == NULL);
}

static PyObject *shpy_client_get_host(shpy_client *self, void *closure)
{
    (void)closure;
    return Py_NewRef(self->host);
}

static PyObject *shpy_client_get_port(shpy_client *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->port);
}

static PyObject *shpy_client_repr(shpy_client *self)
{
    return PyUnicode_FromFormat("<simhash.Client %U:%d%s>", self->host, self->port,
                                self->c ? "" : " closed");
}

static PyGetSetDef shpy_client_getset[] = {
    {"closed", (getter)shpy_client_get_closed, NULL, "True after close().", NULL},
    {"host", (getter)shpy_client_get_host, NULL, "The coordinator's host.", NULL},
    {"port", (getter)shpy_client_get_port, NULL, "The coordinator's port.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define SHPY_KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

static PyMethodDef shpy_client_methods[] = {
    {"add", SHPY_KW(shpy_client_add),
     "add(fp, docid) -> bool\n\nStore (fp, docid) (SIMHASH.ADD); True when the pair is new."},
    {"add_many", SHPY_KW(shpy_client_add_many),
     "add_many(items) or add_many(fps, docids) -> int\n\n"
     "Store many pairs, pipelined: items is an iterable of (fp, docid) pairs, or fps\n"
     "(ints or a buffer of uint64) and docids are two sequences of the same length.\n"
     "Returns the number of new pairs. When some items get error replies the others are\n"
     "stored and ServerError is raised with attributes ok, failed, added, first_failed."},
    {"delete", SHPY_KW(shpy_client_delete),
     "delete(fp, docid=None) -> int\n\n"
     "Remove docid from fp, or without docid the fingerprint and all its documents\n"
     "(SIMHASH.DEL); returns the number of document ids removed."},
    {"query", SHPY_KW(shpy_client_query),
     "query(fp, distance=None, limit=0) -> list[tuple[int, int, list[str]]]\n\n"
     "Stored fingerprints within distance bits of fp (None: the corpus distance), at\n"
     "most limit of them (0: all), as (fp, distance, [docid, ...]), nearest first."},
    {"query_many", SHPY_KW(shpy_client_query_many),
     "query_many(fps, distance=None, limit=0) -> list[list[tuple]]\n\n"
     "query of every fingerprint, pipelined; one result list per fingerprint."},
    {"check", SHPY_KW(shpy_client_check),
     "check(fp, docid, distance=None) -> list[tuple[int, int, list[str]]]\n\n"
     "The matches stored before, then adds (fp, docid) (SIMHASH.CHECK): the crawler's\n"
     "one-call near-duplicate check."},
    {"check_text", SHPY_KW(shpy_client_check_text),
     "check_text(docid, text, format='text', distance=None)\n"
     "    -> tuple[int, list[tuple[int, int, list[str]]]]\n\n"
     "As check with the fingerprint of text computed by the server\n"
     "(SIMHASH.CHECKTEXT); format='html' reads text as an HTML page ('html-all':\n"
     "all its visible text even with algorithm v5). Returns (fingerprint,\n"
     "matches)."},
    {"fingerprint", SHPY_KW(shpy_client_fingerprint),
     "fingerprint(text, format='text') -> int\n\n"
     "The server's fingerprint of text (str as UTF-8, or bytes; format='html' for an\n"
     "HTML page, 'html-all' for all its visible text with algorithm v5);\n"
     "with the server's default algorithm, the same value as\n"
     "simhash.fingerprint(text)\n"
     "(html=True, all_text=...)."},
    {"info", (PyCFunction)shpy_client_info, METH_NOARGS,
     "info() -> dict[str, int | str]\n\n"
     "The coordinator's SIMHASH.INFO as a dict (integers converted)."},
    {"reconnect", (PyCFunction)shpy_client_reconnect, METH_NOARGS,
     "reconnect() -> None\n\nOpen the connection again now (calls after a connection\n"
     "error reconnect once by themselves)."},
    {"close", (PyCFunction)shpy_client_close, METH_NOARGS,
     "close() -> None\n\nClose the connection; later calls raise ClientError. Idempotent."},
    {"__enter__", (PyCFunction)shpy_client_enter, METH_NOARGS, "Return self."},
    {"__exit__", (PyCFunction)shpy_client_exit, METH_VARARGS, "Close the client."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(shpy_client_doc,
"Client(host='127.0.0.1', port=7000, timeout=5.0, password=None)\n\n"
"A connection to simhash-coordinator (the distributed corpus) over the C client\n"
"library. timeout (seconds, None for no limit) bounds the connect and every reply.\n"
"With a password, AUTH is sent. Errors raise ClientError subclasses carrying the\n"
"server's text: ServerError (an error reply), ClientConnectionError (connect, read\n"
"or write failed), ClientTimeoutError, ProtocolError; bad arguments raise\n"
"TypeError / ValueError / OverflowError before anything is sent. Calls release the\n"
"GIL; one Client may be shared by threads (calls are serialised). Use it as a\n"
"context manager to close it.");

static PyTypeObject shpy_client_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simhash.Client",
    .tp_basicsize = sizeof(shpy_client),
    .tp_dealloc = (destructor)shpy_client_dealloc,
    .tp_repr = (reprfunc)shpy_client_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = shpy_client_doc,
    .tp_methods = shpy_client_methods,
    .tp_getset = shpy_client_getset,
    .tp_new = shpy_client_new,
};

/* One exception type simhash.NAME, added to the module; returns it or NULL. */
static PyObject *shpy_exc(PyObject *m, const char *name, const char *doc, PyObject *base)
{
    char full[64];
    snprintf(full, sizeof(full), "simhash.%s", name);
    PyObject *t = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (!t)
        return NULL;
    if (PyModule_AddObjectRef(m, name, t) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

int shpy_client_register(PyObject *m, shpy_state *st)
{
    if (!(st->client_error = shpy_exc(m, "ClientError",
            "An error of a Client call; .status names the C library's status "
            "(SHC_ERR_SERVER, ...). The message is the server's text when it answered.",
            PyExc_Exception)) ||
        !(st->server_error = shpy_exc(m, "ServerError",
            "The server answered with an error reply (its text is the message).",
            st->client_error)) ||
        !(st->io_error = shpy_exc(m, "ClientConnectionError",
            "Connect, read or write failed; the connection was closed (the next call "
            "reconnects once by itself).", st->client_error)) ||
        !(st->timeout_error = shpy_exc(m, "ClientTimeoutError",
            "No answer in time (the client's timeout, or the server's -TIMEOUT reply).",
            st->client_error)) ||
        !(st->protocol_error = shpy_exc(m, "ProtocolError",
            "The server's reply had an unexpected shape.", st->client_error)))
        return -1;
    if (PyType_Ready(&shpy_client_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "Client", (PyObject *)&shpy_client_type) < 0)
        return -1;
    return 0;
}
