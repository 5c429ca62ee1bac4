"""simhash.scrapy: near-duplicate filtering for Scrapy crawls, on the distributed corpus.

Two components, enabled in a Scrapy project's settings.py (docs/python.md, "Scrapy"):

    DOWNLOADER_MIDDLEWARES = {"simhash.scrapy.SimhashDownloaderMiddleware": 560}
    ITEM_PIPELINES = {"simhash.scrapy.SimhashPipeline": 300}

SimhashDownloaderMiddleware asks the corpus about every text response (HTML or other
text, status 2xx; at priority 560 it sees bodies after HttpCompressionMiddleware (590)
has decompressed them and after redirects (600) were followed) with SIMHASH.CHECKTEXT under the response's URL: the page is
stored, and when a stored page was within the distance the response is dropped
(IgnoreRequest) before any spider callback sees it. SimhashPipeline does the same for
items: the text of one field, stored under the id of another, near-duplicate items
dropped (DropItem).

Settings: SIMHASH_HOSTS (list or comma-separated "host:port"; several coordinators fail
over), SIMHASH_PASSWORD_FILE (its first line is the password), SIMHASH_DISTANCE (None:
the deployment's), SIMHASH_FORMAT ("auto": html for HTML responses, text for other
text; or "html", "text"), SIMHASH_FAIL_OPEN (True: keep pages while the corpus cannot
answer and count an error; False: stop the crawl), SIMHASH_TIMEOUT (seconds);
pipeline: SIMHASH_ITEM_TEXT_FIELD, SIMHASH_ITEM_ID_FIELD, SIMHASH_ITEM_FORMAT.
Stats: simhash/checked, simhash/dropped, simhash/errors. A request with
meta["dont_simhash"] = True (a hub page that must be followed) is not checked.

Each component keeps one connection per process, used from one thread of its own
(a Twisted thread pool of size 1): the reactor never waits on the network, and the
checks are serialised, so of two near-duplicates crawled at once the second always
sees the first. Scrapy is imported only when a component is created, so this module
imports without it.
"""

import logging

from ._simhash import Client, ClientError

__all__ = ["SimhashDownloaderMiddleware", "SimhashPipeline", "SimhashChecker"]

logger = logging.getLogger(__name__)

_FORMATS = ("auto", "html", "text")


def _setting_hosts(value):
    """SIMHASH_HOSTS as the Client's host string: "h1:p1,h2:p2"."""
    if isinstance(value, str):
        hosts = [h.strip() for h in value.split(",") if h.strip()]
    else:
        hosts = [str(h).strip() for h in value]
    if not hosts:
        raise ValueError("SIMHASH_HOSTS is empty")
    for h in hosts:
        host, sep, port = h.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("SIMHASH_HOSTS: %r is not host:port" % h)
    return ",".join(hosts)


def _read_password(path):
    """The first line of the password file (None without a file)."""
    if not path:
        return None
    with open(path, "rb") as f:
        line = f.readline().rstrip(b"\r\n")
    if not line:
        raise ValueError("SIMHASH_PASSWORD_FILE %s: empty first line" % path)
    return line


class SimhashChecker:
    """One connection to the corpus and the one thread that uses it.

    check(docid, text, fmt) returns a Deferred firing with the list of stored matches
    (empty: the text is new); the call runs in the checker's thread, never on the
    reactor. A connection error reconnects on the next call (Client does it).
    """

    def __init__(self, settings):
        from twisted.python.threadpool import ThreadPool

        self.hosts = _setting_hosts(settings.get("SIMHASH_HOSTS", "127.0.0.1:7000"))
        self.password = _read_password(settings.get("SIMHASH_PASSWORD_FILE"))
        d = settings.get("SIMHASH_DISTANCE")
        self.distance = None if d in (None, "") else int(d)
        self.timeout = settings.getfloat("SIMHASH_TIMEOUT", 5.0)
        self.fail_open = settings.getbool("SIMHASH_FAIL_OPEN", True)
        self._client = None
        self._pool = ThreadPool(minthreads=1, maxthreads=1, name="simhash")
        self._pool.start()

    def _call(self, docid, text, fmt):
        # runs in the pool's thread
        if self._client is None:
            self._client = Client(self.hosts, timeout=self.timeout, password=self.password)
        _, matches = self._client.check_text(docid, text, format=fmt, distance=self.distance)
        return matches

    def check(self, docid, text, fmt):
        from twisted.internet import reactor, threads

        return threads.deferToThreadPool(reactor, self._pool, self._call, docid, text, fmt)

    def close(self):
        """Stop the thread (after the checks queued) and close the connection."""
        self._pool.stop()
        if self._client is not None:
            self._client.close()
            self._client = None


class _SimhashComponent:
    """What the middleware and the pipeline share: settings, stats, error policy."""

    def __init__(self, crawler):
        from scrapy import signals

        self.crawler = crawler
        self.stats = crawler.stats
        self.checker = SimhashChecker(crawler.settings)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def _closed(self, spider):
        self.checker.close()

    async def _is_duplicate(self, docid, text, fmt, spider):
        """True when the corpus held a page within the distance (the text is stored
        either way); False when new, or when the corpus failed and SIMHASH_FAIL_OPEN
        keeps pages; the crawl is closed when it does not."""
        from scrapy.utils.defer import maybe_deferred_to_future

        try:
            matches = await maybe_deferred_to_future(self.checker.check(docid, text, fmt))
        except (ClientError, OSError) as e:
            self.stats.inc_value("simhash/errors", spider=spider)
            if self.checker.fail_open:
                # the first error and every 100th at WARNING, the rest at DEBUG
                n = self.stats.get_value("simhash/errors", 0, spider=spider)
                logger.log(logging.WARNING if n % 100 == 1 else logging.DEBUG,
                           "simhash: %s not checked, kept (%d errors so far): %s", docid, n, e,
                           extra={"spider": spider})
                return False
            logger.error("simhash: %s not checked, closing the crawl (SIMHASH_FAIL_OPEN is off): %s",
                         docid, e, extra={"spider": spider})
            self.crawler.engine.close_spider(spider, "simhash_unavailable")
            return True
        self.stats.inc_value("simhash/checked", spider=spider)
        if not matches:
            return False
        self.stats.inc_value("simhash/dropped", spider=spider)
        logger.debug("simhash: %s dropped: %s is %d bits away", docid,
                     matches[0][2][0] if matches[0][2] else matches[0][0], matches[0][1],
                     extra={"spider": spider})
        return True


class SimhashDownloaderMiddleware(_SimhashComponent):
    """Drops responses whose text is a near-duplicate of a page already stored."""

    def __init__(self, crawler):
        fmt = crawler.settings.get("SIMHASH_FORMAT", "auto")
        if fmt not in _FORMATS:
            raise ValueError("SIMHASH_FORMAT must be one of %s, not %r" % (", ".join(_FORMATS), fmt))
        self.format = fmt
        super().__init__(crawler)

    def _format_of(self, response):
        """"html" or "text" for a response to check, None for one to pass on."""
        from scrapy.http import HtmlResponse, TextResponse

        if not isinstance(response, TextResponse) or not 200 <= response.status < 300:
            return None
        if self.format != "auto":
            return self.format
        return "html" if isinstance(response, HtmlResponse) else "text"

    async def process_response(self, request, response, spider):
        from scrapy.exceptions import IgnoreRequest

        fmt = self._format_of(response)
        if fmt is None or request.meta.get("dont_simhash"):
            return response
        # HTML goes as sent (the parser reads its charset); other text as Scrapy decoded it
        text = response.body if fmt == "html" else response.text
        if await self._is_duplicate(response.url, text, fmt, spider):
            raise IgnoreRequest("simhash: near-duplicate of a stored page: %s" % response.url)
        return response


class SimhashPipeline(_SimhashComponent):
    """Drops items whose text field is a near-duplicate of an item already stored."""

    def __init__(self, crawler):
        s = crawler.settings
        self.text_field = s.get("SIMHASH_ITEM_TEXT_FIELD", "text")
        self.id_field = s.get("SIMHASH_ITEM_ID_FIELD", "url")
        self.format = s.get("SIMHASH_ITEM_FORMAT", "text")
        if self.format not in ("html", "text"):
            raise ValueError("SIMHASH_ITEM_FORMAT must be html or text, not %r" % self.format)
        super().__init__(crawler)

    async def process_item(self, item, spider):
        from itemadapter import ItemAdapter
        from scrapy.exceptions import DropItem

        a = ItemAdapter(item)
        text, docid = a.get(self.text_field), a.get(self.id_field)
        if not text or not docid:
            return item                 # nothing to compare: passed on unchecked
        if isinstance(text, (list, tuple)):
            text = " ".join(text)
        if await self._is_duplicate(str(docid), text, self.format, spider):
            raise DropItem("simhash: near-duplicate of a stored item: %s" % docid)
        return item
