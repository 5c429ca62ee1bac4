/* perm.h: the permutation tables of Manku, Jain and Das Sarma (WWW 2007).
 *
 * 64 bits are split into m blocks, block i = bits [i*64/m, (i+1)*64/m) counted
 * from the least significant bit (as simhash-cpp). Two hashes within k bits agree
 * on at least m-k blocks, so for every choice of m-k "leading" blocks there is a
 * table in which such a pair shares its top prefix_bits. Table t (0-based) uses
 * the t-th (m-k)-combination of block indices in lexicographic order. Its
 * permutation moves the leading blocks to the most significant end, lowest block
 * index highest, followed by the remaining blocks, again lowest index highest.
 * The layout is part of the stored data format in distributed mode: never change it. */
#ifndef SIMHASH_PERM_H
#define SIMHASH_PERM_H

#include <stddef.h>
#include <stdint.h>

#define PERM_MAX_TABLES 1000

typedef struct perm_table {
    unsigned prefix_bits;     /* width of the leading blocks, 1..64 */
    uint64_t prefix_mask;     /* top prefix_bits bits set */
    unsigned nlead;           /* m - k */
    uint64_t lead_blocks;     /* bit b set when block b is a leading block */
    /* per block, in the order they appear in the permuted value */
    uint8_t  order[64];       /* block index at permuted position p */
    uint8_t  src_shift[64];   /* indexed by block: its position in the input */
    uint8_t  dst_shift[64];   /* indexed by block: its position in the output */
    uint64_t width_mask[64];  /* indexed by block: (1 << width) - 1 */
    unsigned nblocks;         /* m: entries used in order[] */
} perm_table;

typedef struct perm_set {
    unsigned blocks;          /* m */
    unsigned distance;        /* k */
    unsigned ntables;         /* C(m, m-k) */
    uint64_t block_mask[64];  /* mask of block i in unpermuted hashes */
    perm_table *tables;
} perm_set;

/* Number of tables C(blocks, blocks - distance), or 0 if the setting is invalid
 * or the count exceeds PERM_MAX_TABLES. */
size_t perm_table_count(unsigned blocks, unsigned distance);

/* Build the tables. Returns 0, or -1 with a message naming the problem in err
 * (blocks outside 1..64, distance >= blocks, too many tables, out of memory). */
int perm_set_init(perm_set *ps, unsigned blocks, unsigned distance, char *err, size_t errlen);
void perm_set_free(perm_set *ps);

uint64_t perm_apply(const perm_table *t, uint64_t x);
uint64_t perm_revert(const perm_table *t, uint64_t x);

/* Index of the first table (lexicographic combination order) whose leading blocks
 * all agree between a and b, or -1 when fewer than m-k blocks agree. A pair found in
 * table t is reported only when this returns t, so pairs come out exactly once. */
int perm_first_table(const perm_set *ps, uint64_t a, uint64_t b);

#endif
