#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium renders the page of the report fixture
# (`mxbench report FILE --format html`) to a PNG, which must exist, be of a real size and not
# be one flat colour (a page that failed to render, or rendered nothing, is blank). The
# screenshot stays under the test's build directory (its path printed) for a person to look
# at. Skipped (77) where neither chromium nor chromium-browser is on PATH (scripts/install-deps.sh
# --browser installs it).
# usage: test_browser.sh MXBENCH SOURCE_DIR BUILD_DIR
set -u
BUILD=${3:?usage: test_browser.sh MXBENCH SOURCE_DIR BUILD_DIR}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
# shellcheck source=tests/e2e-lib.sh
. "${2:?usage: test_browser.sh MXBENCH SOURCE_DIR BUILD_DIR}/tests/e2e-lib.sh" test_browser "${1:-}"
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    { echo "test_browser: skipped: neither chromium nor chromium-browser on PATH (scripts/install-deps.sh --browser)"; exit 77; }
FIXTURE=$BUILD/make_report_fixture
[ -x "$FIXTURE" ] || { echo "test_browser: '$FIXTURE' is missing (built with the tests: cmake --build)"; exit 1; }
OUT=$BUILD/test_browser # kept after the test: the page and its screenshot
rm -rf "$OUT"
mkdir -p "$OUT"

"$FIXTURE" "$T/fx.h5" || fail "make_report_fixture: exit $?"
run page "$MX" report "$T/fx.h5" --format html --out "$OUT/report.html" && pass "the page written"

# Chromium's own profile and crash files go under $T, not the user's home
shot=$OUT/report.png
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$T/profile" \
    --screenshot="$shot" --window-size=1280,2400 "file://$OUT/report.html" >"$T/chromium.out" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "chromium rendered the page (exit 0)" || { fail "chromium: exit $rc"; tail -5 "$T/chromium.out" | indent; }
size=$(stat -c %s "$shot" 2>/dev/null || echo 0)
[ "$size" -gt 20000 ] && pass "the screenshot is $size bytes" || fail "the screenshot is $size bytes (blank or missing)"

# Not one flat colour: the distinct bytes of the PNG's pixel data, decoded by python3 where
# there is one (zlib, no imaging library needed), else the spread of the file's bytes by od
# (a flat image compresses to a few repeated bytes).
if command -v python3 >/dev/null; then
    colours=$(python3 - "$shot" <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, width, height, bpp = 8, b"", 0, 0, 4
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        bpp = {2: 3, 6: 4, 0: 1, 4: 2}.get(ctype, 4)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = width * bpp + 1
seen = set()
for y in range(0, height, 7):  # every 7th row, every 5th pixel: enough to see a page
    row = raw[y * stride + 1:(y + 1) * stride]
    for x in range(0, width * bpp, 5 * bpp):
        seen.add(row[x:x + bpp])
print(len(seen))
EOF
    ) || colours=0
else
    colours=$(od -An -v -tu1 "$shot" | tr -s ' ' '\n' | sort -u | wc -l)
fi
[ "${colours:-0}" -gt 8 ] && pass "the screenshot is not one flat colour ($colours distinct values sampled)" ||
    fail "the screenshot looks flat (${colours:-0} distinct values)"
echo "test_browser: screenshot: $shot"

echo "test_browser: $npass passed, $nfail failed"
[ "$nfail" -eq 0 ]
