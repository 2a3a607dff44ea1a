#!/usr/bin/env python3
"""Checks the relative links of the project's Markdown: every linked file exists, and every #anchor names a
heading of the file it points into.

    python3 scripts/check-doc-links.py             # README.md, CHANGELOG.md, docs/, Fuzz/README.md, DocC
    python3 scripts/check-doc-links.py FILE.md...  # only these files

Prints one line per broken link, `file:line: target`, and exits 1 when there is any; exits 0 otherwise.

What counts as a link: `[text](path)`, `[text](path#anchor)`, `[text](#anchor)` (images too, `![alt](path)`)
and reference definitions `[label]: path`, outside fenced code blocks, inline code and HTML comments. Links with a
scheme (`https:`, `mailto:`, ...) are not checked, nor DocC's `<doc:...>` and ``symbol`` links. A path is
relative to the file that holds it (or to the repository root when it starts with `/`). Anchors follow GitHub's
rule: the heading's text, lowercased, without punctuation other than `-`, `_` and spaces, spaces turned into
`-`; a repeated heading gets `-1`, `-2`, ... in order. `<a name="...">` and `id="..."` anchors count too.
Anchors are checked in Markdown targets only (a link to `File.swift#L10` checks that the file exists).

Python 3 standard library only: CI runs it before anything is built.
"""
import glob
import os
import re
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\n[ \t]*\n).)*?[^`]\1(?!`)|(`+)\2(?!`)", re.S)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
# [text](destination "optional title"): one level of brackets in the text, one of parentheses in the destination.
INLINE_LINK = re.compile(
    r"\[(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*\]"
    r"\(\s*(<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^<>\n]*>|\S+)", re.M)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\bname=[\"']([^\"']+)[\"']|\bid=[\"']([^\"']+)[\"']", re.I)


def default_files():
    patterns = ["README.md", "CHANGELOG.md", "docs/**/*.md", "Fuzz/README.md", "Sources/**/*.docc/**/*.md"]
    files = []
    for pattern in patterns:
        files += sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))
    return [f for f in dict.fromkeys(files) if os.path.isfile(f)]


def masked(text):
    """The text with fenced code blocks, code spans and HTML comments blanked out (newlines kept, so offsets and
    line numbers stay those of the file)."""
    lines = text.split("\n")
    fence = None
    for i, line in enumerate(lines):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                lines[i] = ""
        else:
            # A fence closes with a run of the same character, at least as long, and nothing after it.
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and line.strip() == match.group(1):
                fence = None
            lines[i] = ""
    text = "\n".join(lines)
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = HTML_COMMENT.sub(blank, text)
    return CODE_SPAN.sub(blank, text)


def heading_text_to_slug(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)   # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)                       # HTML tags
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)                      # \w: Unicode letters, digits and "_"
    return text.replace(" ", "-")


_anchor_cache = {}


def anchors(path):
    """The anchors GitHub makes for the headings of the Markdown file at `path`, with its HTML anchors."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(path, encoding="utf-8") as f:
        lines = masked(f.read()).split("\n")
    # Code spans are blanked in `lines`; headings need their text, so read them from the unmasked file too.
    with open(path, encoding="utf-8") as f:
        raw = f.read().split("\n")
    texts = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        atx = ATX_HEADING.match(line)
        if atx:
            texts.append(ATX_HEADING.match(raw[i]).group(2) or "")
        elif i > 0 and SETEXT_UNDERLINE.match(line) and lines[i - 1].strip() \
                and not ATX_HEADING.match(lines[i - 1]) and not SETEXT_UNDERLINE.match(lines[i - 1]):
            texts.append(raw[i - 1])
    occurrences = {}
    found = set()
    for text in texts:
        base = heading_text_to_slug(text)
        slug = base
        while slug in occurrences:
            occurrences[base] += 1
            slug = f"{base}-{occurrences[base]}"
        occurrences[slug] = 0
        found.add(slug)
    for match in HTML_ANCHOR.finditer("\n".join(raw)):
        found.add(match.group(1) or match.group(2))
    _anchor_cache[path] = found
    return found


def broken_links(path):
    with open(path, encoding="utf-8") as f:
        text = masked(f.read())
    targets = [(m.start(1), m.group(1)) for m in INLINE_LINK.finditer(text)]
    targets += [(m.start(1), m.group(1)) for m in REFERENCE_DEFINITION.finditer(text)]
    for offset, target in sorted(targets):
        line = text.count("\n", 0, offset) + 1
        destination = target[1:-1] if target.startswith("<") and target.endswith(">") else target
        if not destination or SCHEME.match(destination):
            continue
        file_part, _, anchor = destination.partition("#")
        file_part = urllib.parse.unquote(file_part)
        if file_part:
            base = ROOT if file_part.startswith("/") else os.path.dirname(path)
            linked = os.path.normpath(os.path.join(base, file_part.lstrip("/")))
        else:
            linked = path
        if not os.path.exists(linked):
            yield line, target
        elif anchor and os.path.isfile(linked) and linked.lower().endswith((".md", ".markdown")):
            if urllib.parse.unquote(anchor) not in anchors(linked):
                yield line, target


def main(arguments):
    files = [os.path.abspath(a) for a in arguments] if arguments else default_files()
    failures = 0
    for path in files:
        for line, target in broken_links(path):
            print(f"{os.path.relpath(path, ROOT)}:{line}: {target}")
            failures += 1
    if failures:
        print(f"check-doc-links: {failures} broken link(s) in {len(files)} files", file=sys.stderr)
        return 1
    print(f"check-doc-links: every relative link of {len(files)} files resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
