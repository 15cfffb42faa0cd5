#!/usr/bin/env bash
# Rebuild tests/encoders: expected.json, then every encoder's files in data/ (see README.md).
#
#   tests/encoders/rebuild.sh              # all of them
#   tests/encoders/rebuild.sh go rust      # only these encoders (expected.json is rewritten first)
#
# Needs python3, and go, node/npm, cargo, java/mvn for the encoders asked for; each fetches its
# pinned library from its usual package registry. Then check the result with
#   poetry run pytest tests/test_encoder_fixtures.py
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
encoders=("$@")
[ ${#encoders[@]} -gt 0 ] || encoders=(go node rust java)

python3 "$here/make_expected.py"

for encoder in "${encoders[@]}"; do
  echo "== $encoder" >&2
  case "$encoder" in
    go) (cd "$here/go" && go run . ../data) ;;
    node) (cd "$here/node" && npm install --no-package-lock --no-audit --no-fund && node main.mjs ../data) ;;
    rust) (cd "$here/rust" && cargo run --quiet -- ../data) ;;
    java) (cd "$here/java" && mvn --quiet --batch-mode compile exec:java -Dexec.args=../data) ;;
    *) echo "unknown encoder: $encoder (go, node, rust or java)" >&2; exit 2 ;;
  esac
done
