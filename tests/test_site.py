#!/usr/bin/env python3
"""The course site as a reader meets it: test_site.py SITE_DIR ARTIFACT_DIR

1. Every internal link and image of every page resolves to a file of the site.
2. In headless Chromium every lesson page and the main page load, and every page with formulas
   shows them typeset by the local MathJax (no raw TeX left, no MathJax error).
3. A screenshot of the main page is kept in ARTIFACT_DIR/site-main.png.
Exits 77 (CTest: skipped) when no Chromium is installed, 1 on any failure.
"""
import glob
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--hide-scrollbars"]


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value and ((tag == "a" and name == "href") or (tag in ("img", "script") and name == "src")
                          or (tag == "link" and name == "href")):
                self.refs.append(value)


def broken_links(site):
    bad = []
    for page in sorted(glob.glob(os.path.join(site, "*.html"))):
        parser = Links()
        with open(page, encoding="utf-8", errors="replace") as f:
            parser.feed(f.read())
        for ref in parser.refs:
            url = urllib.parse.urlparse(ref)
            if url.scheme or ref.startswith(("#", "mailto:", "javascript:")):
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(page), urllib.parse.unquote(url.path)))
            if url.path and not os.path.exists(target):
                bad.append(f"{os.path.basename(page)}: {ref}")
    return bad


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def main():
    site, artifacts = sys.argv[1], sys.argv[2]
    failures = []
    if not os.path.exists(os.path.join(site, "index.html")):
        print(f"SKIPPED: no site in {site} (docs.build did not run: no doxygen?)")
        return 77
    bad = broken_links(site)
    failures += [f"broken link or image: {b}" for b in bad]
    print(f"links and images: {len(glob.glob(os.path.join(site, '*.html')))} pages, {len(bad)} broken")

    browser = chromium()
    if browser is None:
        for f in failures:
            print(f)
        if failures:
            return 1
        print("SKIPPED: no Chromium to load the pages (scripts/install-deps.sh test installs it)")
        return 77
    pages = ["index.html"] + sorted(os.path.basename(p) for p in glob.glob(os.path.join(site, "md_*.html")))
    profile = tempfile.mkdtemp()
    try:
        for page in pages:
            path = os.path.join(site, page)
            with open(path, encoding="utf-8", errors="replace") as f:
                source = f.read()
            has_math = "\\(" in source or "\\[" in source
            dom = subprocess.run([browser, *CHROME_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000",
                                  "--dump-dom", "file://" + os.path.abspath(path)],
                                 capture_output=True, text=True, timeout=120).stdout
            if "</html>" not in dom:
                failures.append(f"{page}: did not load")
                continue
            typeset = dom.count("<mjx-container")
            if has_math and typeset == 0:
                failures.append(f"{page}: formulas not typeset (is MathJax copied into the site?)")
            if "<mjx-merror" in dom:
                failures.append(f"{page}: MathJax reports an error in a formula")
            print(f"{page}: loaded, {typeset} formulas typeset")
        os.makedirs(artifacts, exist_ok=True)
        shot = os.path.join(artifacts, "site-main.png")
        subprocess.run([browser, *CHROME_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000",
                        "--window-size=1400,1800", f"--screenshot={shot}",
                        "file://" + os.path.abspath(os.path.join(site, "index.html"))],
                       capture_output=True, timeout=120)
        if not os.path.exists(shot) or os.path.getsize(shot) == 0:
            failures.append("no screenshot of the main page")
        else:
            print(f"screenshot: {shot}")
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
