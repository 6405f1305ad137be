#!/usr/bin/env bash
# Judges the livechain scenario's results in LAB_RESULT (see lab/scenarios/livechain.sh):
# prints each case's line of cases.txt and fails when one is FAIL or none ran.
set -uo pipefail
R=${LAB_RESULT:?LAB_RESULT must name the results directory}
[ -s "$R/cases.txt" ] || { echo "no cases ran (cases.txt is missing or empty)"; exit 1; }
cat "$R/cases.txt"
total=$(grep -c '' "$R/cases.txt")
ok=$(grep -c '^ok ' "$R/cases.txt")
echo "livechain: $ok of $total cases as expected"
[ "$ok" = "$total" ]
