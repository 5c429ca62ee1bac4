/* rs_acl.h: the users file (aclfile) of the RESP server framework: a subset of
 * Redis's ACL file. One user a line:
 *
 *   user <name> on|off >password #<sha256 hex> ... +@role -@role +command -command
 *
 * Blank lines and lines starting with '#' are comments. Rules apply left to right,
 * the last one matching a command wins; a user starts off and with no command.
 * Roles (categories) over the command categories of rserver.h (RS_CMD_CAT_*):
 *   @read   read commands and harmless built-ins (PING, HELLO, CLIENT, COMMAND, INFO)
 *   @write  @read and the commands that add (SIMHASH.ADD, CHECK, CHECKTEXT)
 *   @shard  @read and the worker's SHARD.* commands the coordinator sends
 *   @admin, @all, allcommands: every command; nocommands is -@all
 * `~*`, `allkeys`, `&*` and `allchannels` are accepted and mean nothing (no keys
 * here). Passwords are kept as SHA-256 digests only. Parsed by rs_acl_parse, which
 * names the line of the first error. See docs/security.md#users-and-roles. */
#ifndef SIMHASH_RS_ACL_H
#define SIMHASH_RS_ACL_H

#include <stddef.h>

#define RS_ACL_MAX_USERS 1024
#define RS_ACL_MAX_PASSWORDS 16     /* per user */
#define RS_ACL_MAX_RULES 64         /* per user */
#define RS_ACL_NAME_MAX 64          /* bytes of a user or command name */
#define RS_ACL_MAX_LINE 8192
#define RS_ACL_MAX_FILE (1u << 20)

typedef struct rs_acl rs_acl;

/* 1 when name[0..len) is a command the server knows (any case), else 0. */
typedef int (*rs_acl_known_fn)(const char *name, size_t len, void *arg);

/* Parses len bytes of text. known (NULL: any name accepted) checks the names of
 * +command / -command rules. Returns the table, or NULL with err set to "line N: why"
 * (or "out of memory"). */
rs_acl *rs_acl_parse(const char *text, size_t len, rs_acl_known_fn known, void *arg,
                     char *err, size_t errlen);
/* rs_acl_parse of the file at path; err starts with "path:" then. */
rs_acl *rs_acl_load(const char *path, rs_acl_known_fn known, void *arg, char *err,
                    size_t errlen);
void rs_acl_free(rs_acl *a);

size_t rs_acl_nusers(const rs_acl *a);
/* Index of the user named name[0..len) (exact), or -1. */
int rs_acl_find(const rs_acl *a, const char *name, size_t len);
const char *rs_acl_name(const rs_acl *a, int user);
/* 1 when the user is on. */
int rs_acl_enabled(const rs_acl *a, int user);
/* 1 when the user is on and pass[0..len) is one of its passwords (every digest is
 * compared, without an early exit), else 0. */
int rs_acl_password_ok(const rs_acl *a, int user, const char *pass, size_t len);
/* 1 when the user's rules allow the command named name with category bits cat
 * (RS_CMD_CAT_*, 0: admin), else 0. */
int rs_acl_allows(const rs_acl *a, int user, const char *name, unsigned cat);

#endif
