#!/usr/bin/env bash
# Browser tests end to end: install chromium if missing, npm ci for playwright-core, build the runner,
# start `runner serve --enable-test-policies` on a free loopback port with a fresh runs dir, run the
# node tests, stop the server. Screenshots land in target/ui-screenshots/ (git-ignored).
#   FORGE_REQUIRE_MODEL=1  makes a missing model file a failure (otherwise the real-model test skips)
#   CARGO_TARGET_DIR       honoured (the runner links llama.cpp: a cold build takes minutes)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

# Debian's chromium, plus a CJK font so the Chinese UI text renders in screenshots.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
fc-list :lang=zh 2>/dev/null | grep -q . || missing+=(fonts-wqy-zenhei)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing ${missing[*]} (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

echo "== playwright-core (npm ci)"
(cd tests/ui && npm ci --no-audit --no-fund --loglevel=error)

echo "== building the runner"
# Same target set as `cargo test --workspace`, so llama.cpp is not built a second time
# with other build-dependency features (as `cargo build -p runner` alone would be).
cargo build --workspace --all-targets
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET_DIR/debug/runner"
[ -x "$BIN" ] || { echo "runner binary not found at $BIN" >&2; exit 1; }

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
WORK="$(mktemp -d -t forge-ui-XXXXXX)"
LOG="$WORK/runner.log"
"$BIN" serve --port "$PORT" --enable-test-policies --runs-dir "$WORK/runs" >"$LOG" 2>&1 &
SERVER_PID=$!
cleanup() {
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('$BASE/status', timeout=1)" 2>/dev/null; then break; fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then echo "runner exited:" >&2; cat "$LOG" >&2; exit 1; fi
  sleep 0.2
done
echo "== runner up at $BASE"

status=0
FORGE_UI_BASE="$BASE" node --test tests/ui/scripted.test.mjs tests/ui/budgets.test.mjs tests/ui/timeline.test.mjs tests/ui/written.test.mjs tests/ui/course.test.mjs tests/ui/chapter.test.mjs tests/ui/grades.test.mjs tests/ui/real-model.test.mjs || status=$?
if [ "$status" -ne 0 ]; then echo "== runner log"; cat "$LOG"; fi
exit "$status"
