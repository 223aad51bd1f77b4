#!/usr/bin/env bash
# emit_folder.sh SCHEDC: `emit` into a folder that holds an earlier emit (issue: processes and files).
#   A smaller schedule after a larger one removes the larger one's extra files (rank_4..7.cpp),
#   which the manifest `.schedc-manifest` lists, and never a file schedc did not write.
#   A failed emit (a file too large to write, a name taken by a folder) leaves the folder exactly
#   as it was, with no temporary inside; one left by a killed emit is removed by the next.
set -u
schedc=$1
. "$(dirname "$0")/../common/prelude.sh"
out=$tmp/out
emit() { "$schedc" emit --family 1f1b "$@" -o "$out" 2> "$tmp/err"; }

emit --pp 8 -m 16 || fail "pp 8: exit $?"
for r in 0 1 2 3 4 5 6 7; do [ -f "$out/rank_$r.cpp" ] || fail "pp 8: no rank_$r.cpp"; done
echo "my notes" > "$out/notes.txt"
echo "// mine" > "$out/rank_9.cpp"  # a user's file with a name like schedc's
emit --pp 4 -m 8 || fail "pp 4: exit $?"
for r in 0 1 2 3; do [ -f "$out/rank_$r.cpp" ] || fail "pp 4: no rank_$r.cpp"; done
for r in 4 5 6 7; do [ -e "$out/rank_$r.cpp" ] && fail "pp 4 after pp 8: the stale rank_$r.cpp is still there"; done
[ "$(cat "$out/notes.txt" 2> /dev/null)" = "my notes" ] || fail "pp 4: the user's notes.txt was removed or changed"
[ "$(cat "$out/rank_9.cpp" 2> /dev/null)" = "// mine" ] || fail "pp 4: the user's rank_9.cpp was removed or changed"
echo "emit_folder: pp 4 after pp 8 removed rank_4..7.cpp and kept the user's files"

# snapshot: every file with its content, hidden ones included.
snapshot() { (cd "$out" && find . -print | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum); }
before=$(snapshot)

# A file too large to write (main.cpp of pp 8 m 64 is about 220 KiB; the rank files fit).
( trap '' XFSZ; ulimit -f 100; exec "$schedc" emit --family 1f1b --pp 8 -m 64 -o "$out" ) 2> "$tmp/err"
code=$?
[ $code -eq 1 ] || fail "too large: exit $code (expected 1)"
grep -q "^schedc: error: cannot write .*main.cpp.*: File too large \[io\]" "$tmp/err" || fail "too large: unexpected message"
[ "$(snapshot)" = "$before" ] || fail "too large: the folder changed: $(diff <(echo "$before") <(snapshot))"
echo "emit_folder: a file too large to write left the folder as it was"

# A name taken by a folder: nothing may be replaced before that is known.
mkdir "$out/rank_5.cpp"
before=$(snapshot)
emit --pp 8 -m 16
code=$?
[ $code -eq 1 ] || fail "folder in the way: exit $code (expected 1)"
grep -q "^schedc: error: cannot write .*rank_5.cpp.: it is a directory \[io\]" "$tmp/err" || fail "folder in the way: unexpected message"
[ "$(snapshot)" = "$before" ] || fail "folder in the way: the folder changed: $(diff <(echo "$before") <(snapshot))"
rmdir "$out/rank_5.cpp"
echo "emit_folder: a name taken by a folder left the folder as it was"

# The temporary of an emit killed meanwhile (a process that is gone) is removed by the next emit.
sh -c 'exit 0' &
gone=$!
wait $gone
mkdir -p "$out/.schedc-tmp-$gone" && echo x > "$out/.schedc-tmp-$gone/rank_0.cpp"
emit --pp 8 -m 16 || fail "after a killed emit: exit $?"
ls -A "$out" | grep -q '^\.schedc-tmp' && fail "a temporary is left: $(ls -A "$out")"
for r in 4 5 6 7; do [ -f "$out/rank_$r.cpp" ] || fail "pp 8 again: no rank_$r.cpp"; done
[ "$(cat "$out/notes.txt")" = "my notes" ] || fail "pp 8 again: the user's notes.txt changed"
echo "emit_folder: the next emit removed a killed emit's temporary"
exit 0
