"""simhash: near-duplicate detection with 64-bit Charikar simhash fingerprints.

The API of simhash-py / simhash-pybind on the C core of the simhash project:

    >>> import simhash
    >>> a = simhash.compute([simhash.unsigned_hash(w.encode()) for w in "the quick brown fox".split()])
    >>> simhash.num_differing_bits(a, a ^ 5)
    2
    >>> simhash.find_all([1, 3, 1 << 40], 6, 3)       # every pair within 3 bits
    [(1, 3)]
    >>> corpus = simhash.Corpus(6, 3)                   # an in-memory set with exact lookup
    >>> corpus.insert_bulk([1, 1 << 40])
    2
    >>> corpus.find_all(3)
    [1]

Beyond the seeds: fingerprint(text) (the project's tokenizer and hash, identical to
`simhash fingerprint` and to the server), extract(html) (the text a page's fingerprint
is taken from, as `simhash extract`), buffer input (array('Q'), numpy uint64,
bytes of little-endian words) for every sequence of fingerprints, and Client, a
connection to the distributed corpus (simhash-coordinator). See docs/python.md.

Long calls (bulk corpus calls, find_all, find_clusters, fingerprints of large texts,
every network call) release the GIL.
"""

from ._simhash import (
    WINDOW_DEFAULT,
    WINDOW_MAX,
    Client,
    ClientConnectionError,
    ClientError,
    ClientTimeoutError,
    Corpus,
    Extraction,
    ProtocolError,
    ServerError,
    __version__,
    compute,
    extract,
    find_all,
    find_clusters,
    fingerprint,
    num_differing_bits,
    unsigned_hash,
)

__all__ = [
    "Client",
    "ClientConnectionError",
    "ClientError",
    "ClientTimeoutError",
    "Corpus",
    "Extraction",
    "ProtocolError",
    "ServerError",
    "WINDOW_DEFAULT",
    "WINDOW_MAX",
    "__version__",
    "compute",
    "extract",
    "find_all",
    "find_clusters",
    "fingerprint",
    "num_differing_bits",
    "shingle",
    "unsigned_hash",
]


def shingle(tokens, window=4):
    """Generate the shingles of tokens: lists of `window` consecutive tokens.

    As simhash-py: a moving window over any iterable (consumed lazily); fewer tokens
    than the window give no shingle. window must be a positive int (ValueError
    otherwise, TypeError when it is not an int).

    >>> list(shingle("abcde", 3))
    [['a', 'b', 'c'], ['b', 'c', 'd'], ['c', 'd', 'e']]
    """
    if isinstance(window, bool) or not isinstance(window, int):
        raise TypeError("window must be an int, not %s" % type(window).__name__)
    if window <= 0:
        raise ValueError("window must be positive, got %d" % window)
    return _shingles(iter(tokens), window)


def _shingles(it, window):
    buf = []
    for tok in it:
        buf.append(tok)
        if len(buf) > window:
            del buf[0]
        if len(buf) == window:
            yield list(buf)
