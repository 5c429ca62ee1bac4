/* cmdtable.c: the command table of simhash-coordinator: each client command's name,
 * arity, flags, help text and arguments (COMMAND DOCS), in one list the request server
 * (common/net/rserver.c) looks commands up in. The commands themselves start in
 * commands.c, info.c and scan.c. */
#include "coord.h"

#define COORD_ARGS_END { NULL, NULL, NULL, 0, NULL }
static const rs_arg coord_args_pair[] = { { "fingerprint", "integer", NULL, 0, NULL },
                                          { "docid", "string", NULL, 0, NULL },
                                          COORD_ARGS_END };
static const rs_arg coord_args_add[] = { { "pair", "block", NULL, RS_ARG_MULTIPLE,
                                           coord_args_pair },
                                         COORD_ARGS_END };
static const rs_arg coord_args_del[] = { { "fingerprint", "integer", NULL, 0, NULL },
                                         { "docid", "string", NULL, RS_ARG_OPTIONAL, NULL },
                                         COORD_ARGS_END };
static const rs_arg coord_args_query[] = { { "fingerprint", "integer", NULL, 0, NULL },
                                           { "d", "integer", "DISTANCE", RS_ARG_OPTIONAL,
                                             NULL },
                                           { "n", "integer", "LIMIT", RS_ARG_OPTIONAL, NULL },
                                           COORD_ARGS_END };
static const rs_arg coord_args_check[] = { { "fingerprint", "integer", NULL, 0, NULL },
                                           { "docid", "string", NULL, 0, NULL },
                                           { "d", "integer", "DISTANCE", RS_ARG_OPTIONAL,
                                             NULL },
                                           COORD_ARGS_END };
static const rs_arg coord_args_checktext[] = { { "docid", "string", NULL, 0, NULL },
                                               { "text", "string", NULL, 0, NULL },
                                               { "kind", "string", "FORMAT", RS_ARG_OPTIONAL,
                                                 NULL },
                                               { "d", "integer", "DISTANCE", RS_ARG_OPTIONAL,
                                                 NULL },
                                               COORD_ARGS_END };
static const rs_arg coord_args_fingerprint[] = { { "text", "string", NULL, 0, NULL },
                                                 { "kind", "string", "FORMAT",
                                                   RS_ARG_OPTIONAL, NULL },
                                                 COORD_ARGS_END };

static const rs_arg coord_args_scan[] = { { "cursor", "integer", NULL, 0, NULL },
                                          { "n", "integer", "COUNT", RS_ARG_OPTIONAL, NULL },
                                          { "m", "integer", "LIMIT", RS_ARG_OPTIONAL, NULL },
                                          COORD_ARGS_END };

const rs_command coord_commands[] = {
    /* pipelined ADDs of one client overlap (their locks order them per fingerprint);
     * a later request of the client starts after them, so it sees them */
    { "SIMHASH.ADD", -3, RS_CMD_ORDERED | RS_CMD_CAT_WRITE, coord_cmd_add,
      "Adds documents under their fingerprints; returns the number of new pairs.",
      coord_args_add },
    { "SIMHASH.DEL", -2, RS_CMD_WRITE | RS_CMD_CAT_ADMIN, coord_cmd_del,
      "Removes a document from a fingerprint, or the fingerprint with all its documents.",
      coord_args_del },
    { "SIMHASH.QUERY", -2, RS_CMD_READONLY | RS_CMD_CAT_READ, coord_cmd_query,
      "Stored fingerprints within DISTANCE bits: [fingerprint, distance, [docid ...]], "
      "nearest first.", coord_args_query },
    { "SIMHASH.CHECK", -3, RS_CMD_WRITE | RS_CMD_CAT_WRITE, coord_cmd_check,
      "The matches before adding, then adds the document (as QUERY, then ADD).",
      coord_args_check },
    { "SIMHASH.CHECKTEXT", -3, RS_CMD_WRITE | RS_CMD_CAT_WRITE, coord_cmd_checktext,
      "CHECK with the fingerprint of a text or HTML page: [fingerprint, matches].",
      coord_args_checktext },
    { "SIMHASH.FINGERPRINT", -2, RS_CMD_READONLY | RS_CMD_CAT_READ, coord_cmd_fingerprint,
      "The 64-bit simhash of a text or HTML page, as a decimal string.",
      coord_args_fingerprint },
    { "SIMHASH.EXTRACT", -2, RS_CMD_READONLY | RS_CMD_CAT_READ, coord_cmd_extract,
      "The text a text or HTML page's fingerprint is taken from: [fingerprint, fp, algorithm, "
      "a, rule, r, text, t] (a map in RESP3).", coord_args_fingerprint },
    { "SIMHASH.SCAN", -2, RS_CMD_READONLY | RS_CMD_CAT_READ, coord_cmd_scan,
      "A walk over the corpus: [next cursor, [[fingerprint, [docid ...]] ...]]; cursor 0 "
      "starts it, a next cursor of 0 ends it.", coord_args_scan },
    { "SIMHASH.INFO", -1, RS_CMD_READONLY | RS_CMD_CAT_READ, coord_cmd_info,
      "The coordinator's state, corpus counts, limits, counters and workers.", NULL },
};
#undef COORD_ARGS_END
const size_t coord_ncommands = sizeof(coord_commands) / sizeof(coord_commands[0]);
