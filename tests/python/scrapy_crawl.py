"""scrapy_crawl.py: the site, the crawls and the checks of tests/integration/test_scrapy.sh.

    scrapy_crawl.py site DIR               write the site (index, unique pages in two
                                           templates, exact copies, near-duplicates in
                                           the other template) and DIR/manifest.json
    scrapy_crawl.py validate DIR HOSTS PWFILE D
                                           fingerprint every page with the server
                                           (SIMHASH.FINGERPRINT ... FORMAT html, nothing
                                           stored) and check the planted structure by
                                           brute force: each copy within D bits of its
                                           original, everything else more than D apart
    scrapy_crawl.py crawl URL OUT MODE [SETTING=VALUE ...]
                                           crawl the site from URL with Debian's Scrapy
                                           through simhash.scrapy (MODE middleware,
                                           pipeline, or none for a baseline), write OUT (JSON: URLs that reached
                                           the spider, items kept, stats, finish reason,
                                           the longest reactor stall and check call, the
                                           checks made on the reactor thread)

The index page is fetched with meta dont_simhash (a hub page, followed every time);
originals link to their copies with <link rel="related"> (no visible text), so an
original is always checked before its copies are requested.
"""

import json
import os
import random
import sys
import threading
import time

SEED = 20261126
N_UNIQUE = 240          # unique pages: 140 in template A, 100 in template B
N_A = 140
N_ORIG = 60             # the first 60 uniques have a near-duplicate in the other template
N_EXACT = 30            # the first 30 of those an exact copy too
WORDS = 800
DIST = 3                # the deployment's distance (deploy/simhash-local's default)

TEMPLATES = {
    "A": ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>{links}</head>"
          "<body><nav><a href=\"/index.html\">Home</a></nav>"
          "<article><h1>{title}</h1><p>{body}</p></article>"
          "</body></html>\n"),
    "B": ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>{links}</head>"
          "<body><header><div class=\"brand\">Archive</div></header>"
          "<main><div class=\"post\"><h2>{title}</h2><div>{body}</div></div></main>"
          "</body></html>\n"),
}


def make_site(d):
    import simhash

    rng = random.Random(SEED)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(4000)})
    pages = {}          # name -> {"kind", "of", "template", "title", "body"}
    for i in range(N_UNIQUE):
        words = [rng.choice(vocab) for _ in range(WORDS)]
        pages["u%03d" % i] = {"kind": "unique", "template": "A" if i < N_A else "B",
                              "title": " ".join(words[:4]), "body": words}
    for i in range(N_ORIG):
        src = pages["u%03d" % i]
        # 1 or 2 words replaced, in the other template; edits are drawn until the page
        # is within DIST bits of its original (the local fingerprint of its HTML: what
        # the server computes, checked by `validate`)
        want = simhash.fingerprint(render(src, pages, "u%03d" % i), html=True)
        for _ in range(200):
            words = list(src["body"])
            for _ in range(rng.randint(1, 2)):
                words[rng.randrange(8, WORDS)] = rng.choice(vocab)
            near = {"kind": "near", "of": "u%03d" % i, "template": "B" if src["template"] == "A" else "A",
                    "title": src["title"], "body": words}
            got = simhash.fingerprint(render(near, pages, "n%03d" % i), html=True)
            if simhash.num_differing_bits(got, want) <= DIST:
                break
        else:
            raise SystemExit("no near-duplicate of u%03d within %d bits in 200 draws" % (i, DIST))
        pages["n%03d" % i] = near
        if i < N_EXACT:
            pages["c%03d" % i] = dict(src, kind="exact", of="u%03d" % i)
    os.makedirs(d, exist_ok=True)
    for name, p in pages.items():
        if p["kind"] == "exact":
            html = render(pages[p["of"]], pages, p["of"])
        else:
            html = render(p, pages, name)
        with open(os.path.join(d, name + ".html"), "w", encoding="utf-8") as f:
            f.write(html)
    with open(os.path.join(d, "index.html"), "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><head><title>Index</title></head><body><ul>%s</ul></body></html>\n" %
                "".join('<li><a href="/u%03d.html">page %d</a></li>' % (i, i) for i in range(N_UNIQUE)))
    manifest = {name: {k: v for k, v in p.items() if k in ("kind", "of", "template")}
                for name, p in pages.items()}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=0, sort_keys=True)
    return manifest


def render(p, pages, name):
    links = ""
    if p["kind"] == "unique":
        rel = [r for r in ("c%s" % name[1:], "n%s" % name[1:]) if r in pages]
        links = "".join('<link rel="related" href="/%s.html">' % r for r in rel)
    return TEMPLATES[p["template"]].format(title=p["title"], links=links, body=" ".join(p["body"]))


def validate(d, hosts, pwfile, dist):
    import simhash

    manifest = json.load(open(os.path.join(d, "manifest.json")))
    pw = open(pwfile, "rb").readline().rstrip(b"\r\n") if pwfile else None
    fps = {}
    with simhash.Client(hosts, password=pw) as c:
        for name in sorted(manifest):
            with open(os.path.join(d, name + ".html"), "rb") as f:
                fps[name] = c.fingerprint(f.read(), format="html")
    names = sorted(fps)
    bad = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            near = simhash.num_differing_bits(fps[a], fps[b]) <= dist
            planted = manifest[a].get("of") == b or manifest[b].get("of") == a or \
                (manifest[a].get("of") is not None and manifest[a].get("of") == manifest[b].get("of"))
            # copies of one original may be near each other or not; all else is exact
            if planted and (manifest[a].get("of") == b or manifest[b].get("of") == a):
                if not near:
                    bad.append("%s-%s planted but %d bits apart" % (a, b, simhash.num_differing_bits(fps[a], fps[b])))
            elif not planted and near:
                bad.append("%s-%s not planted but %d bits apart" % (a, b, simhash.num_differing_bits(fps[a], fps[b])))
    dists = sorted(simhash.num_differing_bits(fps[n], fps[m["of"]]) for n, m in manifest.items() if "of" in m)
    print(json.dumps({"pages": len(names), "pairs": len(names) * (len(names) - 1) // 2,
                      "violations": bad[:20], "nviolations": len(bad),
                      "planted_distances": {str(k): dists.count(k) for k in sorted(set(dists))}}))
    return 1 if bad else 0


def crawl(url, out, mode, overrides):
    import scrapy
    import simhash.scrapy as shs
    from scrapy.crawler import CrawlerProcess

    reached, items = [], []
    calls = {"n": 0, "on_reactor": 0, "max": 0.0}
    reactor_thread = []

    class TimedClient(shs.Client):
        """The real Client; records how long each check takes and on which thread."""

        def check_text(self, *a, **kw):
            t0 = time.perf_counter()
            try:
                return super().check_text(*a, **kw)
            finally:
                dt = time.perf_counter() - t0
                calls["n"] += 1
                calls["max"] = max(calls["max"], dt)
                if reactor_thread and threading.get_ident() == reactor_thread[0]:
                    calls["on_reactor"] += 1

    shs.Client = TimedClient

    class SiteSpider(scrapy.Spider):
        name = "site"

        def start_requests(self):
            yield scrapy.Request(url, meta={"dont_simhash": True}, callback=self.parse_index)

        def parse_index(self, response):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse_page)

        def parse_page(self, response):
            reached.append(response.url)
            # the item first: its check is queued before its copies are even requested
            text = " ".join(t.strip() for t in response.css("article ::text, .post ::text").getall() if t.strip())
            yield {"url": response.url, "text": text, "html": response.text}
            for href in response.css('link[rel="related"]::attr(href)').getall():
                yield response.follow(href, callback=self.parse_page)

    class Collect:
        def process_item(self, item, spider):
            items.append(item["url"])
            return item

    settings = {
        "LOG_LEVEL": "INFO", "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 16, "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "ITEM_PIPELINES": {Collect: 900},
    }
    if mode == "middleware":
        settings["DOWNLOADER_MIDDLEWARES"] = {"simhash.scrapy.SimhashDownloaderMiddleware": 560}
    elif mode == "pipeline":
        settings["ITEM_PIPELINES"]["simhash.scrapy.SimhashPipeline"] = 300
    elif mode != "none":                # none: the same crawl without simhash (a baseline)
        raise SystemExit("mode must be middleware, pipeline or none")
    for kv in overrides:
        k, _, v = kv.partition("=")
        settings[k] = json.loads(v)
    proc = CrawlerProcess(settings)
    crawler = proc.create_crawler(SiteSpider)

    from twisted.internet import reactor, task
    gaps = {"last": None, "max": 0.0, "ticks": 0}

    def tick():
        now = time.perf_counter()
        if not reactor_thread:
            reactor_thread.append(threading.get_ident())
        if gaps["last"] is not None:
            gaps["max"] = max(gaps["max"], now - gaps["last"])
        gaps["last"] = now
        gaps["ticks"] += 1

    loop = task.LoopingCall(tick)
    reactor.callWhenRunning(loop.start, 0.002)
    proc.crawl(crawler)
    proc.start()
    stats = crawler.stats.get_stats()
    result = {
        "reached": sorted(reached), "items": sorted(items),
        "stats": {k: v for k, v in stats.items() if k.startswith("simhash/")},
        "finish_reason": stats.get("finish_reason"),
        "responses": stats.get("downloader/response_count", 0),
        "reactor": type(reactor).__module__,
        "max_reactor_gap_s": round(gaps["max"], 6), "ticks": gaps["ticks"],
        "checks": calls["n"], "checks_on_reactor_thread": calls["on_reactor"],
        "max_check_s": round(calls["max"], 6),
    }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "site":
        m = make_site(argv[2])
        print(json.dumps({k: sum(1 for p in m.values() if p["kind"] == k) for k in ("unique", "exact", "near")}))
        return 0
    if len(argv) == 6 and argv[1] == "validate":
        return validate(argv[2], argv[3], argv[4], int(argv[5]))
    if len(argv) >= 5 and argv[1] == "crawl":
        return crawl(argv[2], argv[3], argv[4], argv[5:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
