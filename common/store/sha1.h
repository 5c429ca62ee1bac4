/* sha1.h: SHA-1 (FIPS 180-4) of a byte string, as lower-case hex: the name Redis gives a
 * Lua script in its script cache (EVALSHA), so a program can send a script by name
 * without asking Redis for it. Not for anything that needs a secure hash. */
#ifndef SIMHASH_SHA1_H
#define SIMHASH_SHA1_H

#include <stddef.h>

#define SHA1_HEX_LEN 40

/* Writes the 40 hex digits of SHA-1(data[0..len)) and a NUL into hex[41]. */
void sha1_hex(const void *data, size_t len, char hex[SHA1_HEX_LEN + 1]);

#endif
