#!/usr/bin/env python3
"""Oracle for the pre-tokenizer test: splits texts with the `regex` module (a Unicode regex
engine independent of PCRE2) using llama.cpp's semantics: the regexes are applied in order, each
splitting every current piece into its matches and the gaps between them, matching inside the
piece only; `$` means the end of the piece. Reads {"regexes": [...], "texts": [...]} on stdin,
prints a JSON array (per text) of arrays of pieces. Exit status 3 if `regex` is missing."""
import json
import sys

try:
    import regex
except ImportError:
    sys.exit(3)


def split(text, patterns):
    pieces = [text] if text else []
    for pat in patterns:
        pat = regex.sub(r"\\x\{([0-9A-Fa-f]+)\}", lambda m: chr(int(m.group(1), 16)), pat)
        pat = pat.replace(r"\p{sc:Han}", r"\p{Script=Han}")  # PCRE2 spelling of Script (not Script_Extensions)
        if pat.endswith("$") and not pat.endswith("\\$"):
            pat = pat[:-1] + r"\Z"
        rx = regex.compile(pat, regex.V0)
        out = []
        for p in pieces:
            pos = 0
            for m in rx.finditer(p):
                if m.end() == m.start():
                    continue
                if m.start() > pos:
                    out.append(p[pos:m.start()])
                out.append(m.group())
                pos = m.end()
            if pos < len(p):
                out.append(p[pos:])
        pieces = out
    return pieces


job = json.load(sys.stdin)
print(json.dumps([split(t, job["regexes"]) for t in job["texts"]], ensure_ascii=False))
