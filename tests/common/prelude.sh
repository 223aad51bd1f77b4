# The start the shell tests share, sourced once their arguments are read:
#   . "$(dirname "$0")/../common/prelude.sh"
# It gives a temporary folder $tmp, removed on exit; `fail MESSAGE`, which prints
# "NAME: MESSAGE" and the last command's stderr ($tmp/err, when there is one) and exits 1; and
# `expect_exit CODE TEXT COMMAND...`, which runs COMMAND (stdout to $tmp/out, stderr to $tmp/err)
# and fails unless it exits CODE with TEXT in its stderr.
test_name=$(basename "$0" .sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "$test_name: $*" >&2
  [ -f "$tmp/err" ] && cat "$tmp/err" >&2
  exit 1
}
expect_exit() {
  local want=$1 text=$2
  shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  local code=$?
  [ "$code" -eq "$want" ] || fail "\`$*\` exited $code, expected $want"
  grep -qF -- "$text" "$tmp/err" || fail "\`$*\`: stderr lacks \`$text\`"
}
