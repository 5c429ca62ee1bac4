/* redis_cmd.c: the records of the shard worker's Redis commands (shard_rcmd,
 * redis_int.h). A query or a batch sends tens of commands at once, so a freed record
 * is kept for the next command rather than given back to malloc (up to
 * SHARD_CMD_FREE_MAX a connection). */
#include "redis_int.h"

#include <stdlib.h>
#include <string.h>

shard_rcmd *shard_rcmd_new(shard_redis *r)
{
    shard_rcmd *cmd = r->cmd_free;
    if (cmd == NULL)
        return calloc(1, sizeof *cmd);
    r->cmd_free = cmd->next_free;
    r->cmd_nfree--;
    memset(cmd, 0, sizeof *cmd);
    return cmd;
}

void shard_rcmd_free(shard_redis *r, shard_rcmd *cmd)
{
    free(cmd->fmt);
    if (r->cmd_nfree >= SHARD_CMD_FREE_MAX) {
        free(cmd);
        return;
    }
    cmd->fmt = NULL;
    cmd->next_free = r->cmd_free;
    r->cmd_free = cmd;
    r->cmd_nfree++;
}

void shard_rcmd_free_kept(shard_redis *r)
{
    while (r->cmd_free) {
        shard_rcmd *cmd = r->cmd_free;
        r->cmd_free = cmd->next_free;
        free(cmd);
    }
    r->cmd_nfree = 0;
}
