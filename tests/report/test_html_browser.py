"""The HTML report rendered by a real headless browser (Debian's chromium)."""

import shutil
import struct
import subprocess
import zlib

import pytest
from report_helpers import make_model, make_run

from mprof.report.build import build_report
from mprof.report.html import render_html, write_html

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium():
    """Chromium is installed by scripts/bootstrap.sh (make test runs it): missing, the test
    fails; it never installs anything itself."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed: run scripts/bootstrap.sh")


@pytest.fixture(scope="module")
def chromium():
    return find_chromium()


def run_chromium(chromium, tmp_path, url, *extra):
    cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, cwd=tmp_path)


def decode_png(data: bytes):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


@pytest.mark.slow
def test_html_report_renders_in_chromium(chromium, tmp_path):
    page = write_html(
        build_report(make_run(4), make_model(), source="run.json", model_path="pipe.model.json"),
        tmp_path / "report.html",
    )
    url = page.resolve().as_uri()

    dom = run_chromium(chromium, tmp_path, url, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert html.count("<svg") == 5  # where, model vs measured, stacked costs, latency, graph
    assert html.count('class="seg"') >= 4 * 8  # 8 categories on each of 4 PEs
    assert html.count('class="edge"') == 5  # the five synchronization events of Fig 4.15
    assert html.count('class="node"') == 4
    assert "ENQ -&gt; DEQ -&gt; consume" in html
    assert "inside the model's 90 % band" in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")  # self-contained

    png = tmp_path / "shot.png"
    shot = run_chromium(chromium, tmp_path, url, f"--screenshot={png}", "--window-size=1200,2000")
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    assert png.stat().st_size > 20_000
    width, height, bpp, rows = decode_png(png.read_bytes())
    assert (width, height) == (1200, 2000)
    colours, non_white = set(), 0
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            px = row[x : x + 3]
            colours.add(px)
            non_white += px != b"\xff\xff\xff"
    assert len(colours) > 20  # plots in several colours, text, not a blank page
    assert non_white > 0.03 * (height // 4) * (width // 4)


def test_html_is_self_contained_and_escaped():
    doc = make_run(3)
    doc["argv"] = ["pipe", "<script>alert(1)</script>"]
    html = render_html(build_report(doc))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<link" not in html and "<style>" in html
    assert "no model" in html and html.count("<svg") == 4  # no model-vs-measured plot
