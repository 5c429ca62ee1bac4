/* sha1.c: SHA-1 as FIPS 180-4 defines it (sha1.h), one call over a buffer. */
#include "sha1.h"

#include <stdint.h>
#include <string.h>

static uint32_t sha1_rol(uint32_t x, unsigned n)
{
    return x << n | x >> (32 - n);
}

/* One 64-byte block into the state h[5]. */
static void sha1_block(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = sha1_rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999u;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1u;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdcu;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6u;
        }
        uint32_t t = sha1_rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = sha1_rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void sha1_hex(const void *data, size_t len, char hex[SHA1_HEX_LEN + 1])
{
    static const char dig[] = "0123456789abcdef";
    uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
    const uint8_t *p = data;
    size_t n = len;
    for (; n >= 64; n -= 64, p += 64)
        sha1_block(h, p);
    uint8_t tail[128];                  /* the rest, 0x80, zeros, the bit length */
    memset(tail, 0, sizeof tail);
    memcpy(tail, p, n);
    tail[n] = 0x80;
    size_t tl = n + 9 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8u;
    for (int i = 0; i < 8; i++)
        tail[tl - 1 - (size_t)i] = (uint8_t)(bits >> (8 * i));
    for (size_t off = 0; off < tl; off += 64)
        sha1_block(h, tail + off);
    for (int i = 0; i < 20; i++) {
        uint8_t byte = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
        hex[2 * i] = dig[byte >> 4];
        hex[2 * i + 1] = dig[byte & 15];
    }
    hex[SHA1_HEX_LEN] = '\0';
}
