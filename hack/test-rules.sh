#!/usr/bin/env bash
# test-rules.sh: proves the Prometheus rules with promtool (the pinned 3.x build in ./bin).
#   1. the committed deploy/prometheus/*.rules.yml match their template (go run ./hack/genrules -check);
#   2. promtool check rules on every generated rules file;
#   3. promtool test rules on every scenario in deploy/prometheus/tests/.
# PROMTOOL=/path/to/promtool overrides ./bin/promtool (e.g. Debian's 2.42 for a cross-check).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

promtool="${PROMTOOL:-./bin/promtool}"
if [[ ! -x "$promtool" ]]; then
	echo "test-rules: $promtool is missing: run 'make tools' first" >&2
	exit 1
fi
echo "test-rules: $("$promtool" --version 2>&1 | head -n 1)"

go run ./hack/genrules -check

shopt -s nullglob
rules=(deploy/prometheus/*.rules.yml)
tests=(deploy/prometheus/tests/*_test.yml)
if ((${#rules[@]} == 0 || ${#tests[@]} == 0)); then
	echo "test-rules: no rules files or no tests under deploy/prometheus" >&2
	exit 1
fi
"$promtool" check rules "${rules[@]}"

passed=0 failed=0
for t in "${tests[@]}"; do
	if "$promtool" test rules "$t"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "promtool rule tests: ${passed} passed, ${failed} failed"
((failed == 0))
