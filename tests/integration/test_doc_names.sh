#!/usr/bin/env bash
# test_doc_names.sh: docs/architecture.md walks the code by name; every function it
# names as `name()` must exist: a C definition or declaration, a member of an
# operations table (`(*name)(`), or a call into hiredis or libevent. A renamed or
# removed function makes the walk stale and this test fail, naming it.
set -u
. "$(dirname "$0")/lib.sh"
th_init doc_names
doc="$TH_SRC/docs/architecture.md"
[ -f "$doc" ] || th_fail "no $doc"
names=$(grep -o '`[A-Za-z_][A-Za-z0-9_]*()`' "$doc" | tr -d '`()' | sort -u)
[ -n "$names" ] || th_fail "no function names found in $doc"
missing=
n=0
for name in $names; do
    n=$((n + 1))
    case "$name" in redis*|event_*|evbuffer_*|bufferevent_*|evconnlistener_*) continue;; esac
    if ! grep -rqE --include=*.c --include=*.h \
            "^[A-Za-z].*[^A-Za-z0-9_]$name\(|^$name\(|define $name\(|\(\*$name\)\(" \
            "$TH_SRC/common" "$TH_SRC/shard" "$TH_SRC/coordinator" "$TH_SRC/client"; then
        missing="$missing $name"
    fi
done
[ -z "$missing" ] || th_fail "docs/architecture.md names functions the code does not have:$missing"
th_log "ok: $n function names in docs/architecture.md found in the code"
