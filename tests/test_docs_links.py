# SPDX-License-Identifier: Apache-2.0
"""test_docs_links.py: every relative link in the repository's Markdown (README, CHANGELOG, docs/, ...)
names a file that exists and, with a #fragment, a heading of that file, by GitHub's rule for heading
anchors (lower case; characters other than letters, digits, '_', '-' and spaces dropped; spaces to '-';
a repeated heading gets -1, -2, ...). The README and the docs link dated sections of BENCHMARKS.md
whose titles are long and easy to get wrong. Fenced code blocks are skipped. Runs anywhere."""
import os
import re
import sys
import tempfile

import pyutil

check = pyutil.Checks()
src = os.environ.get("EHT_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

LINK = re.compile(r"\]\(([^)\s]*)\)")
HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")


def slug(title):
    """GitHub's anchor for a heading's text."""
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link in a heading: its text
    s = re.sub(r"[^\w\- ]", "", s.strip().lower())
    return s.replace(" ", "-")


def prose_lines(path):
    """The file's lines outside fenced code blocks, with their numbers."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"\s*(```|~~~)", line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
                continue
            if fence is None:
                yield n, line


def anchors(path):
    seen, out = {}, set()
    for _, line in prose_lines(path):
        m = HEADING.match(line)
        if not m:
            continue
        a = slug(m.group(2))
        k = seen.get(a, 0)
        seen[a] = k + 1
        out.add(a if k == 0 else "%s-%d" % (a, k))
    return out


def broken_links(root, files):
    """(file, line, link, why) for every relative link of files (paths under root) that does not resolve."""
    cache, bad = {}, []
    for rel in files:
        path = os.path.join(root, rel)
        for n, line in prose_lines(path):
            for m in LINK.finditer(line):
                link = m.group(1)
                if not link or re.match(r"[a-z][a-z0-9+.-]*:", link):  # http:, mailto: ...
                    continue
                target, _, frag = link.partition("#")
                tpath = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
                if not os.path.exists(tpath):
                    bad.append((rel, n, link, "no such file"))
                    continue
                if frag and tpath.endswith(".md"):
                    if tpath not in cache:
                        cache[tpath] = anchors(tpath)
                    if frag not in cache[tpath]:
                        bad.append((rel, n, link, "no such heading"))
    return bad


def markdown_files(root):
    out = []
    for d, dirs, names in os.walk(root):
        # build trees (.gitignore's /build*/, python/build), packaging output and hidden folders are not ours
        dirs[:] = [x for x in dirs if not x.startswith((".", "build", "dist", "__pycache__")) and not x.endswith(".egg-info")]
        out += [os.path.relpath(os.path.join(d, x), root) for x in names if x.endswith(".md")]
    return sorted(out)


# The rule itself, on headings of the kinds the docs use.
check(slug("The step on an H200 (2026-12-06, one more session, later)") ==
      "the-step-on-an-h200-2026-12-06-one-more-session-later", "dates and commas")
check(slug("The 16 Ki threshold; the step at `b35ba23`") == "the-16-ki-threshold-the-step-at-b35ba23",
      "code spans and semicolons")
check(slug("A kernel's pull tops out at 51 GB/s") == "a-kernels-pull-tops-out-at-51-gbs", "apostrophes and slashes")

# A broken link is found (so a clean run below means something), a good one is not.
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "a.md"), "w") as f:
        f.write("# Top\n\n## Top\n\n```\n[not a link](nowhere.md)\n```\n"
                "[ok](b.md#a-section) [ok](#top-1) [ok](https://example.com/x#y)\n"
                "[bad](b.md#missing) [bad](c.md) [bad](#top-2)\n")
    with open(os.path.join(tmp, "b.md"), "w") as f:
        f.write("# A section\n")
    got = [(b[2], b[3]) for b in broken_links(tmp, ["a.md"])]
    check(got == [("b.md#missing", "no such heading"), ("c.md", "no such file"), ("#top-2", "no such heading")],
          "the checker finds exactly the three broken links: %r" % got)

files = markdown_files(src)
check("README.md" in files and os.path.join("docs", "BENCHMARKS.md") in files, "the docs are found: %r" % files[:5])
for rel, n, link, why in broken_links(src, files):
    check(False, "%s:%d: link %s: %s" % (rel, n, link, why))
print("PASS" if check.failures == 0 else "FAIL: %d" % check.failures)
sys.exit(1 if check.failures else 0)
