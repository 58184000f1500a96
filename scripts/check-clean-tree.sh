#!/usr/bin/env bash
# Fails when the working tree differs from the last commit (modified, deleted or untracked files
# that .gitignore does not cover) and names every offending path. .ci/run calls it after the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
dirty="$(git status --porcelain --untracked-files=all)"
before="${FORGE_TREE_BEFORE_TESTS:-}"
if [ -n "$dirty" ]; then
  echo "error: running the tests changed the working tree; these paths differ from HEAD:" >&2
  printf '%s\n' "$dirty" | sed 's/^/  /' >&2
  echo "Tests must write logs under target/ or write deterministic evidence (ARCHITECTURE.md, Invariants)." >&2
  if [ -n "$before" ]; then
    echo "(the tree was not clean before the tests either; these paths differed then:)" >&2
    printf '%s\n' "$before" | sed 's/^/  /' >&2
  fi
  exit 1
fi
echo "working tree clean after the tests"
