/* layout4.c: data layout 4, elastic buckets with table 0's document ids in its members
 * (docs/elastic-buckets.md, "Layout 4"). Everything is layout 3 (layout3_int.h) but
 * where a fingerprint's ids live: a member of a table-0 bucket is the 7 bytes of
 * perm_0(fp) after its first byte followed by the ids packed as layout 2 packs them
 * (layout_ids_put), or the 7 bytes alone when the packing outgrew LAYOUT4_INLINE_MAX
 * and the ids live in the overflow set d:{0:xx}:<16 hex of fp>. There is no id hash:
 * the id hashes of layout 3 and their copies of the table-0 members go (12 B a
 * fingerprint measured at 1M), and a table-0 bucket splits alone.
 *
 * Table 0's entry of a fingerprint is therefore its ids: the lock script writes it
 * (ids added or removed and the member rewritten in one step), nothing else does.
 * Programs write entries from table ops->entry_from (1) on; entry() of table 0 is a
 * ZLEXCOUNT of the fingerprint's members, the check both a ZSCORE and a repair need.
 * The 7 bytes decide a member's bucket and its order, so a table-0 member routes and
 * splits as in layout 3 (a split point is a prefix of at most 7 bytes: two members
 * differ within their first 7), and a range read ends with the successor of its last
 * 7 bytes instead of those bytes themselves (layout4_after). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout3_int.h"

/* The longest table-0 member: Redis's default zset-max-listpack-value (a longer member
 * turns its bucket into a skiplist) */
#define LAYOUT4_MEMBER_MAX 64
#define LAYOUT4_INLINE_MAX (LAYOUT4_MEMBER_MAX - 7)
/* A read's tag of table 0 (its members carry ids); layout 3's tag below it. */
#define LAYOUT4_T0 ((uint64_t)1 << 40)

#define LAYOUT4_STR_(x) #x
#define LAYOUT4_STR(x) LAYOUT4_STR_(x)

/* The lock script: layout 3's check of the bucket and split after it, with the ids_*
 * functions of LAYOUT_IDS_LOCK_BODY on fp's member of the table-0 bucket KEYS[1] (its
 * first 7 bytes ARGV[5]). KEYS = table-0 bucket, overflow set, lock hash, counter
 * hash, directory; ARGV = lock field, token, lease, op, member, limit, ttl, ids.... */
static const char layout4_lock_head[] =
    "local L3_LIMIT = tonumber(table.remove(ARGV, 6))\n"
    "local L3_TTL = tonumber(table.remove(ARGV, 6))\n"
    "local moved = l3_check(KEYS[1], KEYS[5], 'zset')\n"
    "if moved then return moved end\n"
    "local IDS_INLINE = " LAYOUT4_STR(LAYOUT4_INLINE_MAX) "\n"
    /* the exclusive end of the members starting with m: '(' and m's successor */
    "local function l4_after(m)\n"
    "  local i = #m\n"
    "  while i > 0 and string.byte(m, i) == 255 do i = i - 1 end\n"
    "  if i == 0 then return '+' end\n"
    "  return '(' .. string.sub(m, 1, i - 1) .. string.char(string.byte(m, i) + 1)\n"
    "end\n"
    "if #ARGV[5] ~= 7 then return redis.error_reply('ERR layout 4 lock: bad member') end\n"
    "local L4_OLD\n"
    "local function ids_get()\n"
    "  L4_OLD = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[5], l4_after(ARGV[5]), "
    "'LIMIT', 0, 1)[1]\n"
    "  if not L4_OLD then return false end\n"
    "  return string.sub(L4_OLD, 8)\n"
    "end\n"
    "local function ids_del()\n"
    "  if L4_OLD then redis.call('ZREM', KEYS[1], L4_OLD); L4_OLD = nil end\n"
    "end\n"
    "local function ids_put(v)\n"
    "  ids_del()\n"
    "  L4_OLD = ARGV[5] .. v\n"
    "  redis.call('ZADD', KEYS[1], '0', L4_OLD)\n"
    "end\n"
    "local function l3_lock()\n";
static const char layout4_lock_tail[] =
    "\nend\n"
    "local r = l3_lock()\n"
    "if type(r) == 'table' and r[1] == 1 and ARGV[4] == 'A' then\n"
    "  l3_split_full(KEYS[1], nil, KEYS[5], L3_LIMIT, L3_TTL, {})\n"
    "end\n"
    "return r\n";

static int layout4_dir_init(layout_ctx *c)
{
    return layout3_dir_init_with(c, layout4_lock_head, LAYOUT_IDS_LOCK_BODY, layout4_lock_tail);
}

/* The ZRANGEBYLEX argument ending the members that start with the 7 bytes m: '(' and
 * the shortest string above all of them, or "+" when m is all 0xff. out has room for
 * 8 bytes; returns its length. */
static size_t layout4_after(uint8_t *out, const uint8_t *m)
{
    uint8_t v[7];
    size_t i = 7;
    memcpy(v, m, 7);
    while (i > 0 && v[i - 1] == 0xff)
        i--;
    if (i == 0) {
        out[0] = '+';
        return 1;
    }
    v[i - 1]++;
    out[0] = '(';
    memcpy(out + 1, v, i);
    return 1 + i;
}

/* `name key [m7 after(m7)` on fp's members in its table-0 bucket (ZRANGEBYLEX,
 * ZLEXCOUNT, ZREMRANGEBYLEX). */
static void layout4_member_cmd(const layout_ctx *c, uint64_t p0, const char *name,
                               layout_cmd *cmd)
{
    memset(cmd, 0, sizeof *cmd);
    size_t kl = layout3_key_of(c, cmd->key[0], sizeof cmd->key[0], 's', 0, p0);
    uint8_t *lo = (uint8_t *)cmd->key[1], *hi = (uint8_t *)cmd->key[2];
    lo[0] = '[';
    layout3_member(lo + 1, p0);
    size_t hl = layout4_after(hi, lo + 1);
    cmd->argv[0] = name;
    cmd->argvlen[0] = strlen(name);
    cmd->argv[1] = cmd->key[0];
    cmd->argvlen[1] = kl;
    cmd->argv[2] = cmd->key[1];
    cmd->argvlen[2] = 8;
    cmd->argv[3] = cmd->key[2];
    cmd->argvlen[3] = hl;
    cmd->argc = 4;
}

static void layout4_needs(const layout_ctx *c, layout_needs *out)
{
    memset(out, 0, sizeof *out);
    out->zset_entries = c->split_limit;
    out->zset_value = LAYOUT4_MEMBER_MAX;
}

/* Read 0: fp's member (ZRANGEBYLEX, at most one); read 1: the overflow set. */
static void layout4_ids_read(const layout_ctx *c, unsigned i, uint64_t fp, uint64_t p0,
                             layout_cmd *cmd, layout_ids_kind *kind)
{
    if (i == 0) {
        layout4_member_cmd(c, p0, "ZRANGEBYLEX", cmd);
        cmd->argv[4] = "LIMIT";
        cmd->argvlen[4] = 5;
        cmd->argv[5] = "0";
        cmd->argvlen[5] = 1;
        cmd->argv[6] = "1";
        cmd->argvlen[6] = 1;
        cmd->argc = 7;
        *kind = LAYOUT_IDS_MEMBER;
    } else {
        layout_cmd_overflow(cmd, fp, p0);
        *kind = LAYOUT_IDS_SET;
    }
}

static void layout4_has_ids(const layout_ctx *c, uint64_t fp, uint64_t p0, layout_cmd *cmd)
{
    (void)fp;
    layout4_member_cmd(c, p0, "ZLEXCOUNT", cmd);
}

/* ZADD of the member with the one id packed in (scratch: 17 + idlen bytes). */
static void layout4_put_id(const layout_ctx *c, uint64_t fp, uint64_t p0, const void *id,
                           size_t idlen, uint8_t *scratch, layout_cmd *cmd)
{
    (void)fp;
    memset(cmd, 0, sizeof *cmd);
    size_t kl = layout3_key_of(c, cmd->key[0], sizeof cmd->key[0], 's', 0, p0);
    size_t n = layout3_member(scratch, p0);
    n += layout_ids_put(scratch + n, id, idlen);
    const char *argv[4] = {"ZADD", cmd->key[0], "0", (const char *)scratch};
    size_t lens[4] = {4, kl, 1, n};
    memcpy(cmd->argv, argv, sizeof argv);
    memcpy(cmd->argvlen, lens, sizeof lens);
    cmd->argc = 4;
}

/* EVAL lock: KEYS table-0 bucket, overflow set, locks, counters, directory; ARGV field,
 * token, lease, op, member, limit, ttl (the caller adds the ids). */
static void layout4_lock(const layout_ctx *c, uint64_t fp, uint64_t p0, const char *token,
                         unsigned long long lease_ms, const char *op, layout_cmd *cmd)
{
    layout3_lock_cmd(c, fp, p0, token, lease_ms, op, 0, cmd);
}

/* ---- Table entries and reads: layout 3's, table 0's read to the successor ---- */

static int layout4_plan(const layout_ctx *c, unsigned table, uint64_t p, unsigned prefix_bits,
                        layout_plan *pl)
{
    if (layout3_plan(c, table, p, prefix_bits, pl) != 0)
        return -1;
    if (table == 0) {
        uint8_t last[7];
        memcpy(last, pl->r.hi + 1, 7);
        pl->r.hi_len = layout4_after(pl->r.hi, last);
    }
    return 0;
}

static void layout4_plan_read(const layout_ctx *c, const layout_plan *pl, uint64_t i,
                              layout_read *r)
{
    layout3_plan_read(c, pl, i, r);
    if (pl->table == 0)
        r->tag |= LAYOUT4_T0;
}

static int layout4_member_decode(const layout_ctx *c, uint64_t tag, const void *member,
                                 size_t len, uint64_t *p)
{
    if ((tag & LAYOUT4_T0) && len > 7 && len <= LAYOUT4_MEMBER_MAX)
        len = 7;
    return layout3_member_decode(c, tag & ~LAYOUT4_T0, member, len, p);
}

/* Table 0: ZLEXCOUNT of fp's members whatever cmd is (the lock script writes them);
 * the others as layout 3. */
static void layout4_entry(const layout_ctx *c, unsigned table, uint64_t p, const char *cmd,
                          layout_cmd *out)
{
    if (table == 0)
        layout4_member_cmd(c, p, "ZLEXCOUNT", out);
    else
        layout3_entry(c, table, p, cmd, out);
}

/* Layout 3's batched table writes; an item of table 0 (never asked for: entry_from)
 * makes no command (argc 0). */
static void layout4_entries(const layout_ctx *c, unsigned n, const unsigned *tables,
                            const uint64_t *ps, int add, layout_batch *out)
{
    for (unsigned i = 0; i < n; i++)
        if (tables[i] == 0) {
            out->argc = 0;
            return;
        }
    layout3_entries(c, n, tables, ps, add, out);
}

static uint64_t layout4_walk_tag_of(const layout_ctx *c, uint64_t p)
{
    return layout3_walk_tag_of(c, p) | LAYOUT4_T0;
}

static uint64_t layout4_walk_tag_end(const layout_ctx *c, unsigned shard)
{
    return layout3_walk_tag_end(c, shard) | LAYOUT4_T0;
}

static uint64_t layout4_walk_first_value(const layout_ctx *c, uint64_t tag)
{
    return layout3_walk_first_value(c, tag & ~LAYOUT4_T0);
}

static void layout4_walk_read(const layout_ctx *c, uint64_t tag, uint64_t from, layout_read *r)
{
    layout3_walk_read(c, tag & ~LAYOUT4_T0, from, r);
    r->tag |= LAYOUT4_T0;
}

/* The tag of a table-0 bucket marks its members as carrying ids. */
static int layout4_bucket_suffix_parse(const layout_ctx *c, unsigned table, unsigned shard,
                                       const char *s, size_t len, uint64_t *tag)
{
    if (layout3_bucket_suffix_parse(c, table, shard, s, len, tag) != 0)
        return -1;
    if (table == 0)
        *tag |= LAYOUT4_T0;
    return 0;
}

const layout_ops layout4_ops = {
    .version = 4,
    .name = "layout 4",
    .bucket_bits_default = 8,
    .docs_kind = LAYOUT_KEY_BUCKET,
    .ids_reads = 2,
    .entry_from = 1,
    .needs = layout4_needs,
    .ids_read = layout4_ids_read,
    .has_ids = layout4_has_ids,
    .put_id = layout4_put_id,
    .field_of = NULL,
    .lock = layout4_lock,
    .plan = layout4_plan,
    .plan_read = layout4_plan_read,
    .member_decode = layout4_member_decode,
    .entry = layout4_entry,
    .entries = layout4_entries,
    .entries_reply = layout3_entries_reply,
    .walk_pattern = layout3_walk_pattern,
    .walk_tag_of = layout4_walk_tag_of,
    .walk_first_value = layout4_walk_first_value,
    .walk_read = layout4_walk_read,
    .walk_tag_end = layout4_walk_tag_end,
    .bucket_suffix_parse = layout4_bucket_suffix_parse,
    .dir_init = layout4_dir_init,
    .dir_free = layout3_dir_free,
    .dir_need = layout3_dir_need,
    .dir_read = layout3_dir_read,
    .dir_load = layout3_dir_load,
    .dir_reply = layout3_dir_reply,
    .dir_stats = layout3_dir_stats,
    .script_text = layout3_script_text,
};
