/* fuzz_layout_keys.c: libFuzzer target for the readers of keys and members that
 * `simhash fsck` uses (common/store: layout_dir_key_parse, layout_key_parse,
 * layout_bucket_judge, the layout's member_decode).
 *
 * The input is a key, then after the first NUL the members of a sorted set, split at
 * NULs; its first byte chooses a corpus name (none, or "news") and a cached directory
 * (one bucket, or split at the input's second byte). Checks: no crash, leak or overrun
 * under the sanitizers; a directory key accepted is written again byte for byte by
 * layout_tag_key; a bucket key judged is one layout_key_parse reads back as a bucket,
 * its table and shard the same; stray members never outnumber the members; a
 * member decoded lies in the key's shard. Any difference aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "layout.h"
#include "layout_ops.h"
#include "perm.h"

#define FZ_MEMBERS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static layout_ctx lay;
    static perm_set ps;
    static int ready;
    if (!ready) {
        char err[128];
        if (layout_ctx_init(&lay) != 0 || perm_set_init(&ps, 6, 3, err, sizeof(err)) != 0)
            abort();
        ready = 1;
    }
    if (size < 2)
        return 0;
    layout_corpus_set(data[0] & 1 ? "news" : NULL);
    /* the directory of (table 1, shard 0x2a): one bucket, or two split at data[1] */
    redisReply bound = {.type = REDIS_REPLY_STRING, .str = (char *)&data[1], .len = 1};
    redisReply *bp[1] = {&bound};
    redisReply dir = {.type = REDIS_REPLY_ARRAY, .elements = data[0] & 2 ? 1 : 0,
                      .element = bp};
    if (layout_dir_load(&lay, 1, 0x2a, &dir, layout_dir_clock()) != 0)
        abort();
    data += 2;
    size -= 2;
    const uint8_t *nul = memchr(data, 0, size);
    size_t klen = nul ? (size_t)(nul - data) : size;
    char *key = malloc(klen + 1);
    if (key == NULL)
        abort();
    memcpy(key, data, klen);
    key[klen] = '\0';

    unsigned t, xx;
    if (layout_dir_key_parse(key, klen, &t, &xx) == 0) {
        char again[LAYOUT_KEY_MAX];
        if (t >= PERM_MAX_TABLES || xx > 255 ||
            layout_tag_key(again, sizeof(again), 'r', t, xx) != klen ||
            memcmp(again, key, klen) != 0)
            abort();
    }

    redisReply mem[FZ_MEMBERS_MAX], *mp[FZ_MEMBERS_MAX];
    redisReply members = {.type = REDIS_REPLY_ARRAY, .elements = 0, .element = mp};
    size_t off = nul ? klen + 1 : size;
    while (off <= size && members.elements < FZ_MEMBERS_MAX && nul) {
        const uint8_t *end = memchr(data + off, 0, size - off);
        size_t ml = end ? (size_t)(end - (data + off)) : size - off;
        mem[members.elements] = (redisReply){.type = REDIS_REPLY_STRING,
                                             .str = (char *)data + off, .len = ml};
        mp[members.elements] = &mem[members.elements];
        members.elements++;
        off += ml + 1;
    }
    layout_bucket_verdict v;
    if (layout_bucket_judge(&lay, &ps, key, klen, &members, &v) == 0) {
        layout_key k;
        if (layout_key_parse(&lay, &ps, key, klen, &k) != 0 || k.kind != LAYOUT_KEY_BUCKET ||
            k.table != v.table || k.shard != v.shard || v.stray > members.elements ||
            v.table >= ps.ntables)
            abort();
        for (size_t i = 0; i < members.elements; i++) {
            uint64_t p;
            if (lay.ops->member_decode(&lay, v.tag, mem[i].str, mem[i].len, &p) == 0 &&
                layout_shard_of(p) != v.shard)
                abort();
        }
    }
    free(key);
    return 0;
}
