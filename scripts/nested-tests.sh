#!/bin/sh
# Runs inside the nested host (govmm nested), from the module's root: the
# test binaries of the packages that need /dev/kvm, each in its package's
# directory as go test runs it, under test2json; their JSON events go to
# LOG and to the console. Arguments:
#   LOG TEST2JSON TIMEOUT BINDIR MODULE PKG...
# where BINDIR/<last element of PKG>.test is the binary of PKG (go test -c
# -o BINDIR/ names them so). RUN and SKIP, if set, are passed as -test.run
# and -test.skip.
log=$1 t2j=$2 timeout=$3 bindir=$4 module=$5
shift 5
root=$(pwd)
rc=0
for pkg in "$@"; do
	dir=$root/${pkg#"$module"}
	bin=$bindir/$(basename "$pkg").test
	echo "== nested: go test $pkg"
	{ (cd "$dir" && "$t2j" -p "$pkg" -t "$bin" -test.v=test2json -test.count=1 -test.timeout="$timeout" ${RUN:+-test.run="$RUN"} ${SKIP:+-test.skip="$SKIP"})
	  echo $? >/tmp/.nested-test-rc-$$; } | tee -a "$log"
	[ "$(cat /tmp/.nested-test-rc-$$)" = 0 ] || rc=1
done
exit $rc
