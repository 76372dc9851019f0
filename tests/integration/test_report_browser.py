"""The report in a real browser: headless Chromium lays it out and draws the plots.

The set-up installs Debian's ``chromium`` and ``chromium-driver`` when ``/usr/bin/chromium`` is
missing (a minute or two, as root); the tests are skipped only when that install fails because no
package registry can be reached.
"""

import os
import re
import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest

from prdist.render import render_report
from tests.unit.test_report import XSS, XSS_ESCAPED, make_run

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
WIDTH, HEIGHT = 1200, 2600
# apt's words for "the registry cannot be reached" (name resolution, connection, fetch).
UNREACHABLE = re.compile(r"Temporary failure resolving|Could not resolve|Failed to fetch|Unable to connect|Network is unreachable")


@pytest.fixture(scope="session")
def chromium():
    if not os.path.exists(CHROMIUM):
        if shutil.which("apt-get") is None:
            pytest.skip("chromium is not installed and this machine has no apt-get to install it with")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        log = ""
        for step in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium", "chromium-driver"]):
            done = subprocess.run(step, capture_output=True, text=True, env=env, timeout=900)
            log += done.stdout + done.stderr
            if done.returncode != 0:
                break
        if not os.path.exists(CHROMIUM):
            if UNREACHABLE.search(log):
                pytest.skip("cannot install chromium: no package registry is reachable (apt-get failed to fetch)")
            pytest.fail(f"installing chromium with apt-get failed:\n{log[-3000:]}")
    return CHROMIUM


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    run = make_run()
    path = tmp_path_factory.mktemp("report") / "report.html"
    # A hostile title (a run names its report after the resource) must stay text in the browser.
    path.write_text(render_report(**run, title=f"Browser check {XSS}"), encoding="utf-8")
    return path


def browse(chromium, tmp_path, *args):
    profile = tmp_path / "profile"  # a fresh profile: nothing from another run leaks in
    command = [chromium, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=80, cwd=tmp_path)


def read_png(path):
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes) into an array."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    channels = 3 if colour == 2 else 4
    stride = width * channels
    rows = np.frombuffer(zlib.decompress(b"".join(chunks)), np.uint8).reshape(height, stride + 1)
    image = np.zeros((height, stride), np.uint8)
    previous = np.zeros(stride, np.int64)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int64)
        if kind == 0:
            current = line
        elif kind == 1:  # Sub: a running sum along each channel
            current = np.cumsum(line.reshape(width, channels), axis=0).ravel() % 256
        elif kind == 2:  # Up
            current = (line + previous) % 256
        else:  # Average and Paeth depend on the pixel to the left: decode byte by byte
            out, up, raw = [0] * stride, previous.tolist(), line.tolist()
            for x in range(stride):
                a = out[x - channels] if x >= channels else 0
                b = up[x]
                if kind == 3:
                    predictor = (a + b) // 2
                else:
                    c = up[x - channels] if x >= channels else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                out[x] = (raw[x] + predictor) % 256
            current = np.array(out, np.int64)
        image[y] = current
        previous = current
    return image.reshape(height, width, channels)[:, :, :3]


def share_near(image, rgb, tolerance=14):
    return float((np.abs(image.astype(int) - rgb).max(axis=2) <= tolerance).mean())


def test_plots_render_in_chromium(chromium, report_file, tmp_path):
    shot = tmp_path / "shot.png"
    done = browse(chromium, tmp_path, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", report_file.as_uri())
    assert shot.exists(), done.stderr[-2000:]
    image = read_png(shot)
    assert image.shape == (HEIGHT, WIDTH, 3)
    # Not blank: the page is mostly white, but the plots bring many colours.
    pixels = image.reshape(-1, 3).astype(np.int64)
    colours = np.unique(pixels[:, 0] << 16 | pixels[:, 1] << 8 | pixels[:, 2])
    assert colours.size > 200
    # Each plot's own colours cover a visible area. Shares of the whole screenshot, about half
    # of what this page measured (0.0073, 0.011, 0.0012, 0.00044): the precision band (#9ecae1
    # at 60% over white), the bootstrap band (#fdd0a2), the bounds' lines and markers (#08519c)
    # and the exact curve (#cb181d), the last two anti-aliased, hence the wider tolerance.
    assert share_near(image, (197, 223, 237)) > 0.004
    assert share_near(image, (253, 208, 162)) > 0.005
    assert share_near(image, (8, 81, 156), tolerance=30) > 0.0006
    assert share_near(image, (203, 24, 29), tolerance=40) > 0.0002
    # The plots sit where the layout puts them: the first one starts within the first screen.
    blue_rows = np.flatnonzero((np.abs(image.astype(int) - (197, 223, 237)).max(axis=2) <= 14).any(axis=1))
    assert blue_rows.min() < 900


def test_dom_after_layout_holds_the_svgs_and_no_script(chromium, report_file, tmp_path):
    done = browse(chromium, tmp_path, "--dump-dom", report_file.as_uri())
    dom = done.stdout
    assert "<main>" in dom, done.stderr[-2000:]
    ids = re.findall(r'<svg[^>]*\bid="(fig-[a-z]+)"', dom)
    assert ids == ["fig-precision", "fig-pr", "fig-bands"]
    for fig in re.findall(r"<svg\b.*?</svg>", dom, flags=re.S):
        assert re.search(r"<(polyline|polygon|circle)\b", fig)
    assert "<script" not in dom.lower()
    assert XSS not in dom and XSS_ESCAPED in dom
