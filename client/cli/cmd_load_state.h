/* cmd_load_state.h: the resume file of `simhash load --state FILE` (cmd_load_state.c).
 *
 * The file says how far a load of one input got: the input's size in pairs and a hash
 * of its bytes (a file that belongs to another input is refused), the number of pairs
 * from the start that were all acknowledged, and how many of those were new. It is
 * rewritten whole (temporary file, fsync, rename) after each fully acknowledged chunk,
 * so a kill leaves either the old or the new state, never half of one. */
#ifndef SIMHASH_CMD_LOAD_STATE_H
#define SIMHASH_CMD_LOAD_STATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct lst_state {
    uint64_t pairs;        /* pairs in the input */
    uint64_t hash;         /* lst_hash of the input's bytes */
    uint64_t done;         /* pairs [0, done) acknowledged */
    uint64_t added;        /* of those, the new ones the server counted */
} lst_state;

/* FNV-1a (64 bits) of len bytes: the input's identity in a state file. */
uint64_t lst_hash(const void *data, size_t len);

/* Parses len bytes of a state file's text into st: exactly what lst_write writes, no
 * other spelling. Returns 0, or -1 (st untouched). */
int lst_parse(const char *data, size_t len, lst_state *st);

/* Reads the state file at path into st. Returns 1 when read, 0 when the file does
 * not exist (a first run: st untouched), -1 with why (a static text) when it cannot
 * be read or is not a state file of this format. */
int lst_read(const char *path, lst_state *st, const char **why);

/* Writes st to path atomically (path.tmp, fsync, rename). Returns 0 or -1 with errno. */
int lst_write(const char *path, const lst_state *st);

#endif
