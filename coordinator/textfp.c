/* textfp.c: the fingerprint of a request's text or HTML (SIMHASH.FINGERPRINT,
 * SIMHASH.CHECKTEXT), and the text it is taken from (SIMHASH.EXTRACT). A text of at least fingerprint-offload-bytes is fingerprinted on
 * the pool's threads (rs_pool.h: bounded queue, clients served in turn), so a page that
 * takes hundreds of milliseconds to read does not hold the event loop, and with it
 * every other client's requests; a smaller one at once. */
#include "coord.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "rs_pool.h"

/* One text on its way through the pool. The request (and so its argument bytes)
 * stays valid until finished, also when its client disconnects. */
typedef struct coord_textfp_job {
    coord *co;
    rs_req *r;
    const char *text;
    size_t n;
    int html;
    coord_textfp_fn then;
    coord_textx_fn xthen;       /* SIMHASH.EXTRACT: set instead of then */
    unsigned arg;
    uint64_t fp;
    fp_extraction x;            /* with xthen: the text (owned when HTML) */
    int rc;                     /* 0, or -1 with err */
    char err[200];
} coord_textfp_job;

/* The fingerprint of j's text; on a pool thread or on the loop. Touches no shared
 * state: the parameters are read-only while the coordinator runs. */
static void coord_textfp_work(void *arg)
{
    coord_textfp_job *j = arg;
    if (!j->html) {
        j->fp = fp_text_p(j->text, j->n, &j->co->cfg.fp);
        j->rc = 0;
        if (j->xthen)           /* a text's extraction is the text itself */
            j->x = (fp_extraction){ (char *)(uintptr_t)j->text, j->n, "text", j->fp };
        return;
    }
    unsigned flags = j->html == 2 ? FP_HTML_ALL_TEXT : 0;   /* FORMAT html-all */
    if (j->xthen)
        j->rc = fp_html_extract(j->text, j->n, &j->co->cfg.fp, flags, &j->x, j->err,
                                sizeof j->err);
    else
        j->rc = fp_html_text(j->text, j->n, &j->co->cfg.fp, flags, &j->fp, j->err,
                             sizeof j->err);
}

/* Back on the event loop: continue the command, or answer its failure. */
static void coord_textfp_done(void *arg, int ran)
{
    coord_textfp_job *j = arg;
    if (!ran)
        rs_req_fail(j->r, RS_BUSY, "the coordinator is shutting down");
    else if (j->rc != 0)
        rs_req_fail(j->r, RS_ERR, "cannot read the HTML: %s", j->err);
    else if (j->xthen)
        j->xthen(j->r, &j->x);
    else
        j->then(j->r, j->fp, j->arg);
    if (j->xthen && j->html)
        fp_extraction_free(&j->x);
    free(j);
}

/* coord_textfp and coord_textx: runs the job of then or xthen. */
static void coord_textfp_start_job(coord *co, rs_req *r, size_t text_arg, int html,
                                   coord_textfp_fn then, coord_textx_fn xthen, unsigned arg)
{
    if (co->cfg.fp_spec[0] == '\0') {    /* fingerprint-algorithm unset, no worker yet */
        rs_req_fail(r, RS_SHARDDOWN, "no shard worker has reported its corpus's "
                    "fingerprint algorithm yet (or set fingerprint-algorithm)");
        return;
    }
    coord_textfp_job *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        rs_req_fail(r, RS_OOM, "out of memory");
        return;
    }
    *j = (coord_textfp_job){ .co = co, .r = r, .html = html, .then = then, .xthen = xthen,
                             .arg = arg };
    j->text = rs_req_arg(r, text_arg, &j->n);
    co->st.fingerprints++;
    if (co->pool == NULL || j->n < co->cfg.fp_offload_bytes) {
        coord_textfp_work(j);
        coord_textfp_done(j, 1);
        return;
    }
    if (rs_pool_submit(co->pool, rs_req_client_id(r), coord_textfp_work, coord_textfp_done,
                       j) != 0) {
        free(j);
        rs_req_fail(r, RS_BUSY, "too many large texts waiting to be fingerprinted (%u in "
                    "all, %u per client: fingerprint-queue, fingerprint-queue-client); retry "
                    "later", co->cfg.fp_queue, co->cfg.fp_queue_client);
    }
}

void coord_textfp(coord *co, rs_req *r, size_t text_arg, int html, coord_textfp_fn then,
                  unsigned arg)
{
    coord_textfp_start_job(co, r, text_arg, html, then, NULL, arg);
}

void coord_textx(coord *co, rs_req *r, size_t text_arg, int html, coord_textx_fn then)
{
    coord_textfp_start_job(co, r, text_arg, html, NULL, then, 0);
}

int coord_textfp_start(coord *co, char *err, size_t errlen)
{
    if (co->cfg.fp_threads == 0)
        return 0;
    co->pool = rs_pool_new(co->base, co->cfg.fp_threads, co->cfg.fp_queue,
                           co->cfg.fp_queue_client, err, errlen);
    return co->pool ? 0 : -1;
}

void coord_textfp_stop(coord *co)
{
    rs_pool_free(co->pool);
    co->pool = NULL;
}

void coord_textfp_info(coord *co, resp_buf *b)
{
    rs_pool_stats st = { 0 };
    if (co->pool)
        rs_pool_get_stats(co->pool, &st);
    resp_buf_printf(b, "fingerprint_pool_threads:%u\r\nfingerprint_pool_queued:%u\r\n"
                    "fingerprint_pool_running:%u\r\nfingerprint_pool_jobs:%llu\r\n"
                    "fingerprint_pool_refused:%llu\r\n", co->pool ? co->cfg.fp_threads : 0,
                    st.queued, st.running, st.jobs, st.refused);
}
