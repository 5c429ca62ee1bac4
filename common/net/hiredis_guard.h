/* hiredis_guard.h: protect an async hiredis 0.14 connection from a peer that sends a
 * reply nobody asked for. hiredis asserts (aborting the process) on such a reply
 * unless it is an error; with the guard the reply fails to parse instead, and hiredis
 * closes the connection through its normal error path (disconnect callback). */
#ifndef SIMHASH_HIREDIS_GUARD_H
#define SIMHASH_HIREDIS_GUARD_H

struct redisAsyncContext;

/* Install the guard on ac (right after redisAsyncConnect). */
void hiredis_guard(struct redisAsyncContext *ac);

#endif
