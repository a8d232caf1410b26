#!/bin/sh
# expect_exit.sh CODE CMD [ARGS...]: passes when CMD exits with CODE and says why on stderr/stdout.
want=$1
shift
out=$("$@" 2>&1)
got=$?
echo "$out"
if [ "$got" -ne "$want" ]; then
  echo "expected exit code $want, got $got from: $*"
  exit 1
fi
