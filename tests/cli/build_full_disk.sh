#!/usr/bin/env bash
# build_full_disk.sh SCHEDC EXAMPLES: `build` with its cache on a full file system (issue:
# processes and files). The message says what failed (the step, the compiler's exit status and its
# output, which schedc keeps in memory so that the full disk cannot swallow it) instead of
# "compiling ... failed:" and nothing; a source that cannot be written is reported as such, with
# the free space; no temporary is left. The small file system is a tmpfs mounted in
# a user and mount namespace of its own (`unshare -rm`); where that is not allowed the test is
# skipped (exit 77).
set -u
schedc=$1
examples=$2
if [ "${3:-}" != inside ]; then
  unshare -rm true 2> /dev/null || { echo "build_full_disk: skipped: cannot mount a tmpfs (unshare -rm)"; exit 77; }
  exec unshare -rm bash "$0" "$schedc" "$examples" inside
fi
dir=$(mktemp -d)
trap 'umount "$dir/fs" 2> /dev/null; rm -rf "$dir"' EXIT
fail() { echo "build_full_disk: $*" >&2; [ -f "$dir/err" ] && cat "$dir/err" >&2; exit 1; }
mkdir "$dir/fs"

# case NAME SIZE EXPECTED-REGEX: a build into a cache on a tmpfs of SIZE.
case_() {
  mount -t tmpfs -o "size=$2" none "$dir/fs" || { echo "build_full_disk: skipped: mount failed"; exit 77; }
  # A seed of its own: never a cache hit, whatever ccache holds.
  "$schedc" build "$examples/1f1b.sched" --seed $(( $$ * 7 + ${#1} )) --cache-dir "$dir/fs/cache" -o "$dir/exe" 2> "$dir/err"
  code=$?
  [ $code -eq 1 ] || fail "$1: exit $code (expected 1)"
  grep -Eq "$3" "$dir/err" || fail "$1: the message does not say what failed"
  ls "$dir/fs/cache/v1" 2> /dev/null | grep -q '^tmp-' && fail "$1: a temporary is left: $(ls "$dir/fs/cache/v1")"
  [ -e "$dir/exe" ] && fail "$1: an executable was written"
  umount "$dir/fs"
  echo "build_full_disk: $1: $(tr '\n' ' ' < "$dir/err")"
}

# The sources and objects fit, the 10 MB executor does not: the linker fails, and its message (a
# log file on the same full file system stayed empty) is shown.
case_ link 1m '^schedc: error: linking the generated executor failed: `[^`]*` exited with status [0-9]+:$'
grep -q 'No space left on device' "$dir/err" || fail "link: the linker's message is not shown"
# Not even the sources fit (main.cpp is about 56 KiB).
case_ sources 32k '^schedc: error: cannot write `[^`]*` into the build cache `[^`]*`: No space left on device \([0-9]+ KiB free on its file system\) \[io\]'
exit 0
