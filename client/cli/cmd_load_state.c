/* cmd_load_state.c: the resume file of `simhash load --state FILE` (cmd_load_state.h):
 * four lines of text,
 *   simhash-load-state 1
 *   input <pairs> <hash, 16 hex digits>
 *   done <pairs acknowledged from the start>
 *   added <new ones among them>
 * read strictly (anything else is refused) and written atomically. */
#include "cmd_load_state.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LST_MAGIC "simhash-load-state 1"
#define LST_MAX_BYTES 512          /* a valid file is under 120 bytes */

uint64_t lst_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The text of st in a state file; its length (< cap). */
static int lst_format(char *buf, size_t cap, const lst_state *st)
{
    return snprintf(buf, cap, LST_MAGIC "\ninput %" PRIu64 " %016" PRIx64 "\ndone %" PRIu64
                              "\nadded %" PRIu64 "\n",
                    st->pairs, st->hash, st->done, st->added);
}

int lst_parse(const char *data, size_t len, lst_state *st)
{
    char text[LST_MAX_BYTES], again[LST_MAX_BYTES];
    lst_state s;
    if (len >= sizeof text || memchr(data, '\0', len) != NULL)
        return -1;
    memcpy(text, data, len);
    text[len] = '\0';
    if (strncmp(text, LST_MAGIC "\n", sizeof LST_MAGIC) != 0 ||
        strchr(text + sizeof LST_MAGIC, '-') != NULL)     /* sscanf would take -1 */
        return -1;
    if (sscanf(text + sizeof LST_MAGIC, "input %" SCNu64 " %16" SCNx64 " done %" SCNu64
                                        " added %" SCNu64,
               &s.pairs, &s.hash, &s.done, &s.added) != 4)
        return -1;
    lst_format(again, sizeof again, &s);     /* one spelling per state: no other text */
    if (strcmp(again, text) != 0 || s.done > s.pairs || s.added > s.done)
        return -1;
    *st = s;
    return 0;
}

int lst_read(const char *path, lst_state *st, const char **why)
{
    char buf[LST_MAX_BYTES + 1];
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        *why = strerror(errno);
        return -1;
    }
    for (;;) {
        ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *why = strerror(errno);
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len == sizeof buf - 1) {
            close(fd);
            *why = "not a state file of simhash load (too long)";
            return -1;
        }
    }
    close(fd);
    buf[len] = '\0';
    if (lst_parse(buf, len, st) != 0) {
        *why = "not a state file of simhash load";
        return -1;
    }
    return 1;
}

int lst_write(const char *path, const lst_state *st)
{
    char tmp[4096], text[LST_MAX_BYTES];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int len = lst_format(text, sizeof text, st);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, text, (size_t)len);
    if (w != len || fsync(fd) != 0) {
        int e = w < 0 ? errno : EIO;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}
