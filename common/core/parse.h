/* parse.h: strict parsing of numbers given by users (CLI input, RESP arguments). */
#ifndef SIMHASH_PARSE_H
#define SIMHASH_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Parse an unsigned decimal 64-bit number occupying exactly s[0..len).
 * Accepts only ASCII digits (no sign, no spaces, no 0x, no empty string).
 * Returns 0, or -1 with a short reason in *why ("empty", "not a decimal number",
 * "out of range (max 18446744073709551615)"). */
int parse_u64(const char *s, size_t len, uint64_t *out, const char **why);

/* Same for an unsigned integer in [min, max]; why says "out of range (MIN..MAX)". */
int parse_uint_range(const char *s, size_t len, uint64_t min, uint64_t max,
                     uint64_t *out, const char **why);

/* The value of the "name:value" line of an INFO text (Redis INFO, SHARD.INFO):
 * lines end in LF or CRLF, the last one may lack it; name must match the whole key.
 * Sets *val / *vlen (without the CR) and returns 0, or returns -1 when absent. */
int parse_info_line(const char *s, size_t len, const char *name, const char **val,
                    size_t *vlen);

/* The same value copied into buf (at most cap-1 bytes, NUL-terminated); 0, or -1. */
int parse_info_str(const char *s, size_t len, const char *name, char *buf, size_t cap);

#endif
