#!/usr/bin/env bash
# families_covered.sh SCHEDC EXAMPLES_DIR: every family `schedc families` lists has an example
# spec (`schedule = family NAME`), so that the runtime/example/* tests run every family.
set -u
status=0
for fam in $("$1" families | grep -v '^ ' | awk '{print $1}'); do
  if ! grep -Eq "^schedule = family $fam( |\$|\{)" "$2"/*.sched; then
    echo "families_covered: no example in $2 uses family \`$fam\`" >&2
    status=1
  fi
done
exit $status
