/* shpy_md5.c: MD5 (RFC 1321) for simhash.unsigned_hash, the feature hash of
 * simhash-py (first 8 bytes of the digest, big-endian). Written out here so that
 * hashing millions of shingles needs no call back into hashlib; the tests check it
 * against a pure-Python MD5 and against hashlib. */
#include "shpy.h"

#include <string.h>

static const uint32_t shpy_md5_k[64] = {
    0xd76aa478u, 0xe8c7b756u, 0x242070dbu, 0xc1bdceeeu,
    0xf57c0fafu, 0x4787c62au, 0xa8304613u, 0xfd469501u,
    0x698098d8u, 0x8b44f7afu, 0xffff5bb1u, 0x895cd7beu,
    0x6b901122u, 0xfd987193u, 0xa679438eu, 0x49b40821u,
    0xf61e2562u, 0xc040b340u, 0x265e5a51u, 0xe9b6c7aau,
    0xd62f105du, 0x02441453u, 0xd8a1e681u, 0xe7d3fbc8u,
    0x21e1cde6u, 0xc33707d6u, 0xf4d50d87u, 0x455a14edu,
    0xa9e3e905u, 0xfcefa3f8u, 0x676f02d9u, 0x8d2a4c8au,
    0xfffa3942u, 0x8771f681u, 0x6d9d6122u, 0xfde5380cu,
    0xa4beea44u, 0x4bdecfa9u, 0xf6bb4b60u, 0xbebfbc70u,
    0x289b7ec6u, 0xeaa127fau, 0xd4ef3085u, 0x04881d05u,
    0xd9d4d039u, 0xe6db99e5u, 0x1fa27cf8u, 0xc4ac5665u,
    0xf4292244u, 0x432aff97u, 0xab9423a7u, 0xfc93a039u,
    0x655b59c3u, 0x8f0ccc92u, 0xffeff47du, 0x85845dd1u,
    0x6fa87e4fu, 0xfe2ce6e0u, 0xa3014314u, 0x4e0811a1u,
    0xf7537e82u, 0xbd3af235u, 0x2ad7d2bbu, 0xeb86d391u,
};

/* Left rotation amounts: four per round. */
static const unsigned char shpy_md5_r[4][4] = {
    {7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21},
};

static inline uint32_t shpy_md5_rotl(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

/* One 64-byte block into the state h[4]. */
static void shpy_md5_block(uint32_t h[4], const unsigned char *p)
{
    uint32_t m[16], a = h[0], b = h[1], c = h[2], d = h[3];

    for (int i = 0; i < 16; i++)
        m[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
               (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
    for (unsigned i = 0; i < 64; i++) {
        uint32_t f;
        unsigned g;
        switch (i / 16) {
        case 0: f = (b & c) | (~b & d); g = i; break;
        case 1: f = (d & b) | (~d & c); g = (5 * i + 1) % 16; break;
        case 2: f = b ^ c ^ d; g = (3 * i + 5) % 16; break;
        default: f = c ^ (b | ~d); g = (7 * i) % 16; break;
        }
        uint32_t t = d;
        d = c;
        c = b;
        b = b + shpy_md5_rotl(a + f + shpy_md5_k[i] + m[g], shpy_md5_r[i / 16][i % 4]);
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

void shpy_md5(const void *data, size_t len, unsigned char digest[16])
{
    uint32_t h[4] = { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u };
    const unsigned char *p = data;
    unsigned char tail[128];
    size_t full = len / 64 * 64, rest = len - full, tl;
    uint64_t bits = (uint64_t)len * 8;

    for (size_t off = 0; off < full; off += 64)
        shpy_md5_block(h, p + off);
    memset(tail, 0, sizeof(tail));
    if (rest)
        memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    tl = rest + 1 + 8 <= 64 ? 64 : 128;
    for (int i = 0; i < 8; i++)
        tail[tl - 8 + i] = (unsigned char)(bits >> (8 * i));
    for (size_t off = 0; off < tl; off += 64)
        shpy_md5_block(h, tail + off);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            digest[4 * i + j] = (unsigned char)(h[i] >> (8 * j));
}
