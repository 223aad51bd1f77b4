#!/usr/bin/env bash
# output_target.sh SCHEDC: where `-o` may write. An empty path is a bad command line (exit 2,
# naming the flag), never standard output and never after the work is done; a file the user may
# not write (a read-only file) is refused as the shell's `>` refuses it (exit 1, "Permission
# denied"), and left as it was. As root, the read-only case runs as `nobody` (root's shell writes
# read-only files, and so does schedc).
set -u
schedc=$1
. "$(dirname "$0")/../common/prelude.sh"

# -o "" on every command that writes a file or a folder: exit 2, `[bad-flag]`, nothing on stdout.
empty() {
  expect_exit 2 'schedc: error: -o: the output path is empty, expected a file (or `-` for standard output) [bad-flag]' \
    "$schedc" "$@" -o ""
  [ -s "$tmp/out" ] && fail "\`schedc $* -o \"\"\` wrote to stdout"
  return 0
}
printf 'ranks = 2\nmicrobatches = 2\nschedule = family 1f1b\n' > "$tmp/s.sched"
printf '0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n' > "$tmp/s.csv"
empty schedule "$tmp/s.sched"
empty schedule --solve --pp 2 -m 2 --time-limit 30
empty simulate "$tmp/s.sched"
empty show "$tmp/s.sched"
empty verify "$tmp/s.sched"
empty check "$tmp/s.sched"
empty families
empty import torch-csv "$tmp/s.csv"
empty emit "$tmp/s.sched"
empty build "$tmp/s.sched"
# `-o -` is standard output.
"$schedc" schedule "$tmp/s.sched" -o - > "$tmp/dash" 2> "$tmp/err" || fail "-o - failed"
grep -q '"format": "schedc.schedule"' "$tmp/dash" || fail "-o - did not write the schedule to stdout"
echo "output_target: -o \"\" is refused by every command, -o - is stdout"

# A read-only target: refused as `: > FILE` would be, the file unchanged, no temporary left.
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  if ! command -v setpriv > /dev/null; then
    echo "output_target: skipped the read-only case (root, without setpriv)"
    exit 0
  fi
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
chmod 0755 "$tmp"  # the other user reads the spec in it
dir=$tmp/rw
mkdir "$dir" && chmod 0777 "$dir"
echo "keep me" > "$dir/ro.json"
chmod 0444 "$dir/ro.json"
if "${as_user[@]}" sh -c ': > "$1"' sh "$dir/ro.json" 2> /dev/null; then
  fail "the shell wrote the read-only file; the case cannot be tested here"
fi
expect_exit 1 "schedc: error: cannot write \`$dir/ro.json\`: Permission denied [io]" \
  "${as_user[@]}" "$schedc" schedule "$tmp/s.sched" -o "$dir/ro.json"
[ "$(cat "$dir/ro.json")" = "keep me" ] || fail "the read-only file was replaced"
[ -e "$dir/ro.json.schedc-tmp" ] && fail "a temporary was left beside the read-only file"
# Through a symlink, the same.
ln -s ro.json "$dir/link.json"
expect_exit 1 "Permission denied [io]" "${as_user[@]}" "$schedc" schedule "$tmp/s.sched" -o "$dir/link.json"
[ "$(cat "$dir/ro.json")" = "keep me" ] || fail "the read-only file was replaced through a symlink"
# A writable file beside it is replaced as before.
echo old > "$dir/rw.json" && chmod 0666 "$dir/rw.json"
"${as_user[@]}" "$schedc" schedule "$tmp/s.sched" -o "$dir/rw.json" 2> "$tmp/err" || fail "a writable target failed"
grep -q schedc.schedule "$dir/rw.json" || fail "the writable target was not written"
echo "output_target: a read-only target is refused and kept, a writable one replaced"
