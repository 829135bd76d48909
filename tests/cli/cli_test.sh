#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/cli_test.sh CML: the `cml` tool's behaviour at its edges (docs/robustness.md):
# `test --list` selects what a run selects, closed or failing stdout, --json files that stay
# valid JSON, empty --backend values, "<name>:help", exit codes. CML is the built `cml`
# executable.
set -u
cml="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failed=0
check() {  # check DESCRIPTION: fails the test when the previous [[ ]] / command was false
  if [ "$?" -ne 0 ]; then
    echo "FAIL: $1"
    failed=1
  else
    echo "ok   $1"
  fi
}
json_ok() { python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1"; }

# --list matches names, op names and op groups, as a run does.
for filter in Abs movement; do
  listed=$("$cml" test --list --op "$filter" | wc -l)
  ran=$("$cml" test --backend c:threads=1 --op "$filter" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1+\2+\3/p')
  [[ "$listed" -gt 0 && "$listed" -eq $((ran)) ]]
  check "test --list --op $filter lists the $((ran)) cases a run selects (listed $listed)"
done

# A closed stdout: the --json file holds only JSON, and the exit status says stdout failed.
"$cml" test --backend c:threads=1 --op '^exec/compile' -v --json "$tmp/t.json" >&- 2>"$tmp/err"
rc=$?
[[ $rc -ne 0 ]] && grep -q "standard output" "$tmp/err" && json_ok "$tmp/t.json"
check "closed stdout: exit $rc, a message, and valid JSON in the --json file"

# A full stdout is an error, not a silent exit 0.
if [ -w /dev/full ]; then
  "$cml" version >/dev/full 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 1 ]] && grep -q "No space left" "$tmp/err"
  check "stdout on /dev/full: exit $rc with the reason"
fi

# A filter that is not UTF-8 still gives a valid JSON file.
"$cml" test --backend c:threads=1 --op $'^exec/compile_execute|\xff|\xc3\xa9' --json "$tmp/u.json" >/dev/null
json_ok "$tmp/u.json" && grep -q 'ufffd' "$tmp/u.json" && grep -q $'\xc3\xa9' "$tmp/u.json"
check "non-UTF-8 filter: valid JSON, U+FFFD for the bad byte, UTF-8 kept"

# An empty --backend is a usage error for every command, not the built-in default.
for cmd in info test bench; do
  GOMLX_BACKEND=c:threads=1 "$cml" $cmd --backend= >/dev/null 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 2 ]] && grep -q "backend config is empty" "$tmp/err"
  check "$cmd --backend= exits 2 (got $rc)"
done
"$cml" info --backend nosuchbackend >/dev/null 2>&1
rc=$?
[[ $rc -eq 2 ]]
check "info with a backend that cannot be created exits 2 (got $rc)"

# `version` takes no arguments but --help.
"$cml" version extra >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 && ! -s "$tmp/out" ]] && grep -q 'unknown argument "extra"' "$tmp/err"
check "version extra: a usage error, exit 2 (got $rc)"
"$cml" version --help >"$tmp/out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && grep -q "^usage: cml version" "$tmp/out"
check "version --help: the usage on stdout, exit 0 (got $rc)"
# `help COMMAND` is that command's help; any other argument is a usage error.
"$cml" help version >"$tmp/out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && grep -q "^usage: cml version" "$tmp/out"
check "help version: the command's usage on stdout, exit 0 (got $rc)"
"$cml" help extra >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 && ! -s "$tmp/out" ]] && grep -q 'unexpected argument "extra"' "$tmp/err"
check "help extra: a usage error, exit 2 (got $rc)"

# "<name>:help" is a help request: the option list on stdout, exit 0, for every command; an
# unknown backend name is still an error (exit 2).
for cmd in info test bench; do
  "$cml" $cmd --backend c:help >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 0 && ! -s "$tmp/err" ]] && grep -q "^c backend options:" "$tmp/out" &&
    grep -q "threads" "$tmp/out"
  check "$cmd --backend c:help: the options on stdout, exit 0 (got $rc)"
done
"$cml" info --backend nosuchbackend:help >"$tmp/out" 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 && ! -s "$tmp/out" ]] && grep -q "nosuchbackend" "$tmp/err"
check "info --backend nosuchbackend:help exits 2 (got $rc)"

# An output file that cannot be created is a write failure (exit 1), as a full disk is.
"$cml" test --backend c:threads=1 --op '^exec/compile_execute' --json "$tmp/no/such/dir/t.json" \
  >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "cannot write" "$tmp/err"
check "test --json in a missing directory: exit 1 (got $rc)"
"$cml" bench --backend c:threads=1 --no-probes --no-native --reps 1 --filter "32x13x384" \
  --json "$tmp/no/such/dir/b.json" >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "cannot write" "$tmp/err"
check "bench --json in a missing directory: exit 1 (got $rc)"
"$cml" test --backend c:threads=1 --op '(' >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 ]] && grep -q "bad regular expression" "$tmp/err"
check "test with a bad --op regex: a usage error, exit 2 (got $rc)"

# A bench case that fails is in the JSON with its error.
"$cml" bench --backend null --no-probes --no-native --reps 1 --filter "32x13x384" \
  --json "$tmp/b.json" >/dev/null 2>&1
rc=$?
[[ $rc -eq 1 ]] && json_ok "$tmp/b.json" && grep -q '"error": "UNIMPLEMENTED' "$tmp/b.json"
check "bench: a failed case is listed with its error (exit $rc)"

# --json files are replaced whole: a run killed part way leaves the previous file as it was
# (a stray "<file>.partial.<pid>" may stay, as documented).
echo '{"previous": true}' >"$tmp/keep.json"
"$cml" bench --backend c:threads=1 --reps 10000 --filter "matmul f32 1024x1024x1024" \
  --json "$tmp/keep.json" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -TERM $pid 2>/dev/null
wait $pid
rc=$?
[[ $rc -ne 0 ]] && grep -q '"previous": true' "$tmp/keep.json"
check "bench --json: a run killed part way (exit $rc) leaves the previous file whole"
if [ -w /dev/full ]; then
  "$cml" test --backend c:threads=1 --op '^exec/compile_execute' --json /dev/full >/dev/null 2>&1
  rc=$?
  [[ $rc -eq 1 ]]
  check "test --json /dev/full: exit 1 (a write failure, not a usage error; got $rc)"
fi

# bench: --list honours --filter (an exact case name selects that case alone); an empty or
# repeated --compare is a usage error; a contender that fails says why.
[[ "$("$cml" bench --list --filter 'mlp f32 784-512-512-10, batch 1')" == \
   'mlp f32 784-512-512-10, batch 1' ]]
check "bench --list --filter with an exact name lists that case alone"
"$cml" bench --list --filter 'no such case' >/dev/null 2>&1
rc=$?
[[ $rc -eq 1 ]]
check "bench --list with a filter matching nothing exits 1 (got $rc)"
for args in "--compare=" "--compare c:threads=1 --compare c:threads=1"; do
  "$cml" bench $args >/dev/null 2>&1
  rc=$?
  [[ $rc -eq 2 ]]
  check "bench $args exits 2 (got $rc)"
done
"$cml" bench --backend c:threads=1 --compare null --no-probes --no-native --reps 1 \
  --filter "32x13x384" --json "$tmp/c.json" >"$tmp/out" 2>&1
rc=$?
[[ $rc -eq 0 ]] && json_ok "$tmp/c.json" && grep -q 'vs null: UNIMPLEMENTED' "$tmp/out" &&
  grep -q '"compare_errors": {"null": "UNIMPLEMENTED' "$tmp/c.json" &&
  grep -q '"fraction": null' "$tmp/c.json" && grep -q '"fma_gflops": null' "$tmp/c.json"
check "bench: a failing --compare contender gives its reason; --no-probes figures are null"

exit $failed
