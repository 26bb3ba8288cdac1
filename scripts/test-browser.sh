#!/usr/bin/env bash
# The oracle page in a real browser: headless Chromium loads it on a position, clicks a pit,
# and the values it draws must be the API's for the position the move leads to.
# With SCREENSHOT=FILE, also saves a screenshot of the page.
#
# Needs Chromium (Debian: apt-get install chromium); .ci/run installs it.
# Usage: scripts/test-browser.sh
#   AWARI_PROFILE=release  the cargo profile to build with (.ci/run: test, reusing the tests' build)
set -euo pipefail
trap 'echo "FAIL: scripts/test-browser.sh line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
. scripts/common.sh
cargo build --profile "$AWARI_PROFILE" -q -p awari-solver -p awari-probe
TARGET=$(profile_dir)
WORK=$(mktemp -d)
SERVER=
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
"$TARGET/awari-solver" build --db "$WORK/db" --max-stones 16 > /dev/null 2>&1
"$TARGET/awari-probe" serve --db "$WORK/db" --addr 127.0.0.1:0 2> "$WORK/serve.log" &
SERVER=$!
for _ in $(seq 100); do grep -q "http://" "$WORK/serve.log" && break; sleep 0.1; done
URL=$(grep -o 'http://[0-9.:]*/' "$WORK/serve.log")
CHROME=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$WORK/profile" --virtual-time-budget=10000)
BOARD=1,1,1,1,1,2,4,2,3,0,0,0
PIT=5
"${CHROME[@]}" --dump-dom "${URL}?board=$BOARD#click=$PIT" > "$WORK/dom.html" 2> /dev/null
curl -s "${URL}api/position?board=$BOARD" > "$WORK/before.json"
python3 - "$WORK/dom.html" "$WORK/before.json" "$URL" "$PIT" <<'PY'
import json, sys, urllib.request
from html.parser import HTMLParser

dom, before, url, pit = open(sys.argv[1]).read(), json.load(open(sys.argv[2])), sys.argv[3], int(sys.argv[4])

class Pits(HTMLParser):
    def __init__(self):
        super().__init__()
        self.pits, self.current, self.in_mv, self.ready = {}, None, False, False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body" and a.get("data-ready") == "1":
            self.ready = True
        if "pit" in (a.get("class") or "").split():
            self.current = int(a["data-pit"])
            self.pits[self.current] = {"seeds": None, "value": None, "best": "best" in a["class"].split()}
        self.in_mv = tag == "span" and a.get("class") == "mv"
    def handle_data(self, data):
        if self.current is None or not data.strip():
            return
        if self.in_mv:
            self.pits[self.current]["value"] = int(data.replace("+", ""))
        elif self.pits[self.current]["seeds"] is None:
            self.pits[self.current]["seeds"] = int(data)

p = Pits()
p.feed(dom)
assert p.ready, "the page did not finish drawing"
child = before["moves"][pit]["child"]
after = json.load(urllib.request.urlopen(url + "api/position?board=" + ",".join(map(str, child))))
assert [p.pits[i]["seeds"] for i in range(12)] == child, (p.pits, child)
for m in after["moves"]:
    drawn = p.pits[m["pit"]]
    assert drawn["value"] == (m["value"] if m["legal"] else None), (m, drawn)
    assert drawn["best"] == (m["pit"] in after["best"]), (m, drawn)
print(f"ok: the page played pit {pit} of {before['board']} and drew {child} with move values "
      f"{[m['value'] for m in after['moves']]}, best {after['best']}, as the API gives them")
PY
if [ -n "${SCREENSHOT:-}" ]; then
  "${CHROME[@]}" --window-size=820,640 --hide-scrollbars --screenshot="$WORK/shot.png" \
    "${URL}?board=1,1,1,1,1,2,4,2,3,0,0,0" > /dev/null 2>&1
  cp "$WORK/shot.png" "$SCREENSHOT"
  echo "screenshot: $SCREENSHOT"
fi
