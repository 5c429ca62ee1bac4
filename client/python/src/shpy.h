/* shpy.h: what the files of the Python extension simhash._simhash share: argument
 * conversion (Python ints, iterables and buffers to uint64_t), the module state that
 * holds the exception types, and each file's registration function.
 *
 * Every function that can fail returns 0 or -1 (or NULL) with a Python exception set. */
#ifndef SHPY_H
#define SHPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>

/* An array of uint64_t taken from a Python argument: either a view into a buffer
 * (array('Q'), numpy uint64, bytes of little-endian u64; `view` is held until
 * shpy_u64s_release) or a malloc'ed copy. v is valid until the release. */
typedef struct shpy_u64s {
    const uint64_t *v;
    size_t n;
    uint64_t *owned;          /* malloc'ed copy, or NULL */
    Py_buffer view;
    int has_view;
} shpy_u64s;

/* One fingerprint from a Python int (or an object with __index__), 0..2**64-1.
 * what names the argument in the message. Returns 0, or -1 with TypeError (not an
 * integer) or OverflowError (negative or too large). */
int shpy_u64(PyObject *o, const char *what, uint64_t *out);

/* A sequence of fingerprints: a buffer of unsigned 64-bit items (format Q/L, or bytes
 * whose length is a multiple of 8, read little-endian), or any iterable of ints.
 * Returns 0, or -1 with the exception set; release with shpy_u64s_release in both
 * cases (it is safe on a zeroed struct). */
int shpy_u64s_get(PyObject *o, const char *what, shpy_u64s *out);
void shpy_u64s_release(shpy_u64s *s);

/* An int argument in [lo, hi]; ValueError / TypeError / OverflowError otherwise. */
int shpy_int_range(PyObject *o, const char *what, long lo, long hi, long *out);

/* A text argument: str (encoded as UTF-8, strict) or a bytes-like object. Fills
 * data and len; view is used for bytes-like objects and must be released with
 * PyBuffer_Release when *has_view (the str keeps its UTF-8 cache, no copy). */
int shpy_text(PyObject *o, const char *what, const char **data, Py_ssize_t *len,
              Py_buffer *view, int *has_view);

/* A Python int of a uint64_t. */
static inline PyObject *shpy_from_u64(uint64_t v)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)v);
}

/* Inputs larger than this (bytes) are worked on with the GIL released. */
#define SHPY_NOGIL_BYTES 16384
/* Sequences longer than this (items) are worked on with the GIL released. */
#define SHPY_NOGIL_ITEMS 2048

/* Module state: the exception types. */
typedef struct shpy_state {
    PyObject *client_error;
    PyObject *server_error;
    PyObject *io_error;
    PyObject *timeout_error;
    PyObject *protocol_error;
} shpy_state;

/* The module object (set at import; the extension is single-phase initialised). */
extern PyObject *shpy_module;
shpy_state *shpy_get_state(void);

/* Registration of the types; return 0 or -1. */
int shpy_corpus_register(PyObject *m);
int shpy_client_register(PyObject *m, shpy_state *st);

/* MD5 of data (RFC 1321); digest gets 16 bytes. */
void shpy_md5(const void *data, size_t len, unsigned char digest[16]);

#endif
