"""The C/C++ side of the fuzzy parser: a tokenizer and a statement scanner.

The tokenizer understands comments (also ``//`` continued with a backslash), strings, character
literals, C++ raw strings, digit separators, line continuations and preprocessor lines (one token
each), so that "pragma" inside comments or strings is never touched.  The scanner finds the extent
of the statement that follows a directive (its structured block); within ``#if``/``#else`` chains
only the first branch is used to find block boundaries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .directives import Directive, InstrumentError, is_standalone


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------
@dataclass
class Token:
    kind: str  # "id", "num", "str", "punct", "pp" (a whole preprocessor directive)
    text: str  # for "pp": the logical directive (continuations joined, comments blanked)
    start: int  # offsets into the source text
    end: int
    line: int  # first and last physical line (1-based)
    end_line: int


_ID_START = re.compile(r"[A-Za-z_$]")
_ID_CHARS = re.compile(r"[A-Za-z0-9_$]*")
_RAW_PREFIX = re.compile(r"(?:u8|u|U|L)?R$")
_STR_PREFIX = re.compile(r"(?:u8|u|U|L)$")


class Lexer:
    """The tokens of a C/C++ source; errors are InstrumentError with the line."""

    def __init__(self, text: str, path: str):
        self.s, self.path = text, path
        self.n = len(text)
        # line starts, to turn offsets into line numbers
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_of(self, pos: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def error(self, pos: int, msg: str):
        raise InstrumentError(self.path, self.line_of(pos), msg)

    def skip_block_comment(self, i: int) -> int:
        j = self.s.find("*/", i + 2)
        if j < 0:
            self.error(i, "unterminated /* comment")
        return j + 2

    def skip_line_comment(self, i: int) -> int:
        """Up to (not including) the newline that ends a // comment (a backslash continues it)."""
        s = self.s
        while True:
            j = s.find("\n", i)
            if j < 0:
                return self.n
            k = j - 1
            if k >= 0 and s[k] == "\r":
                k -= 1
            if k >= 0 and s[k] == "\\":
                i = j + 1
                continue
            return j

    def skip_quoted(self, i: int, quote: str) -> int:
        s = self.s
        j = i + 1
        while j < self.n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == quote:
                return j + 1
            if c == "\n":
                break
            j += 1
        self.error(i, "unterminated string literal" if quote == '"' else "unterminated character literal")

    def skip_raw_string(self, i: int) -> int:
        """i at the opening quote of R"delim( ... )delim"."""
        s = self.s
        paren = s.find("(", i + 1)
        if paren < 0 or paren - i - 1 > 16:
            self.error(i, "malformed raw string literal")
        delim = s[i + 1:paren]
        close = s.find(")" + delim + '"', paren + 1)
        if close < 0:
            self.error(i, "unterminated raw string literal")
        return close + len(delim) + 2

    def directive(self, i: int) -> tuple[int, str]:
        """A preprocessor directive from its '#': (end offset before the newline, logical text)."""
        s = self.s
        out = []
        j = i
        while j < self.n:
            c = s[j]
            if c == "\\" and s.startswith("\n", j + 1):
                j += 2
                out.append(" ")
                continue
            if c == "\\" and s.startswith("\r\n", j + 1):
                j += 3
                out.append(" ")
                continue
            if c == "\n":
                break
            if c == "/" and s.startswith("/*", j):
                j = self.skip_block_comment(j)
                out.append(" ")
                continue
            if c == "/" and s.startswith("//", j):
                j = self.skip_line_comment(j)
                continue
            if c in "\"'":
                k = self.skip_quoted(j, c)
                out.append(s[j:k])
                j = k
                continue
            out.append(c)
            j += 1
        end = j
        if end > i and s[end - 1] == "\r":
            end -= 1
        return end, "".join(out).strip()

    def tokens(self) -> list[Token]:
        s, n = self.s, self.n
        toks: list[Token] = []
        i = 0
        at_line_start = True
        while i < n:
            c = s[i]
            if c == "\n":
                at_line_start = True
                i += 1
                continue
            if c in " \t\r\f\v":
                i += 1
                continue
            if c == "\\" and s.startswith("\n", i + 1):  # a stray continuation between tokens
                i += 2
                continue
            if c == "/" and s.startswith("/*", i):
                i = self.skip_block_comment(i)
                continue
            if c == "/" and s.startswith("//", i):
                i = self.skip_line_comment(i)
                continue
            if c == "#" and at_line_start:
                end, text = self.directive(i)
                toks.append(Token("pp", text, i, end, self.line_of(i), self.line_of(max(i, end - 1))))
                i = end
                continue
            at_line_start = False
            start = i
            if _ID_START.match(c):
                m = _ID_CHARS.match(s, i + 1)
                j = m.end()
                word = s[i:j]
                if j < n and s[j] == '"' and _RAW_PREFIX.match(word):
                    j = self.skip_raw_string(j)
                    toks.append(Token("str", s[start:j], start, j, self.line_of(start), self.line_of(j - 1)))
                elif j < n and s[j] in "\"'" and _STR_PREFIX.match(word):
                    j = self.skip_quoted(j, s[j])
                    toks.append(Token("str", s[start:j], start, j, self.line_of(start), self.line_of(j - 1)))
                else:
                    toks.append(Token("id", word, start, j, self.line_of(start), self.line_of(start)))
                i = j
                continue
            if c.isdigit() or (c == "." and i + 1 < n and s[i + 1].isdigit()):
                j = i + 1
                while j < n:
                    d = s[j]
                    if d in "eEpP" and j + 1 < n and s[j + 1] in "+-":
                        j += 2
                    elif d.isalnum() or d in "._":
                        j += 1
                    elif d == "'" and j + 1 < n and s[j + 1].isalnum():  # C++14 digit separator
                        j += 2
                    else:
                        break
                toks.append(Token("num", s[i:j], i, j, self.line_of(i), self.line_of(i)))
                i = j
                continue
            if c in "\"'":
                j = self.skip_quoted(i, c)
                toks.append(Token("str", s[i:j], i, j, self.line_of(i), self.line_of(j - 1)))
                i = j
                continue
            toks.append(Token("punct", c, i, i + 1, self.line_of(i), self.line_of(i)))
            i += 1
        return toks


# ----------------------------------------------------------------------------------------------
# Statement scanner
# ----------------------------------------------------------------------------------------------
class Scanner:
    """Finds statement extents in the token list (indices of first and last token)."""

    def __init__(self, toks: list[Token], lexer: Lexer, directives: dict[int, Directive | None]):
        self.toks, self.lexer, self.dirs = toks, lexer, directives
        self.n = len(toks)
        self.else_skip = self._conditional_skips()

    def _conditional_skips(self) -> dict[int, int]:
        """For each #elif/#else token: the index of its chain's #endif (only first branches are scanned)."""
        skips, stack = {}, []
        for i, t in enumerate(self.toks):
            if t.kind != "pp":
                continue
            word = re.match(r"#\s*(\w*)", t.text).group(1)
            if word in ("if", "ifdef", "ifndef"):
                stack.append([])
            elif word in ("elif", "else", "elifdef", "elifndef") and stack:
                stack[-1].append(i)
            elif word == "endif" and stack:
                for j in stack.pop():
                    skips[j] = i
        return skips

    def error(self, i: int, msg: str):
        tok = self.toks[min(i, self.n - 1)] if self.n else None
        raise InstrumentError(self.lexer.path, tok.line if tok else 1, msg)

    def is_omp(self, i: int) -> bool:
        return self.toks[i].kind == "pp" and self.dirs.get(i) is not None

    def sig(self, i: int) -> int:
        """The next index >= i that is not a plain preprocessor line (OpenMP pragmas are significant)."""
        while i < self.n and self.toks[i].kind == "pp" and not self.is_omp(i):
            i = self.else_skip.get(i, i) + 1
        return i

    def expect(self, i: int, text: str, what: str) -> int:
        i = self.sig(i)
        if i >= self.n or self.toks[i].text != text:
            self.error(i, f"expected '{text}' {what}")
        return i

    def matching(self, i: int, open_: str, close: str) -> int:
        """Index of the token closing the bracket at i."""
        depth = 0
        j = i
        while j < self.n:
            t = self.toks[j]
            if t.kind == "pp":
                j = self.else_skip.get(j, j) + 1
                continue
            if t.kind == "punct":
                if t.text == open_:
                    depth += 1
                elif t.text == close:
                    depth -= 1
                    if depth == 0:
                        return j
            j += 1
        self.error(i, f"unbalanced '{open_}': no matching '{close}' before the end of the file")

    def statement(self, i: int) -> tuple[int, int]:
        """(first, last) token index of the statement starting at or after i."""
        i = self.sig(i)
        if i >= self.n:
            self.error(self.n - 1, "expected a statement before the end of the file")
        return i, self.statement_end(i)

    def statement_end(self, i: int) -> int:
        t = self.toks[i]
        if t.kind == "pp":  # an OpenMP directive
            d = self.dirs[i]
            if is_standalone(d):
                return i
            return self.statement(i + 1)[1]
        if t.text == "{":
            return self.matching(i, "{", "}")
        if t.text in ("}", ")", "]"):
            self.error(i, f"expected a statement, found '{t.text}'")
        if t.kind == "id":
            w = t.text
            if w in ("for", "while", "switch"):
                p = self.expect(i + 1, "(", f"after '{w}'")
                return self.statement(self.matching(p, "(", ")") + 1)[1]
            if w == "if":
                j = self.sig(i + 1)
                if j < self.n and self.toks[j].text == "constexpr":
                    j += 1
                p = self.expect(j, "(", "after 'if'")
                end = self.statement(self.matching(p, "(", ")") + 1)[1]
                k = self.sig(end + 1)
                if k < self.n and self.toks[k].text == "else":
                    end = self.statement(k + 1)[1]
                return end
            if w == "do":
                body_end = self.statement(i + 1)[1]
                k = self.expect(body_end + 1, "while", "after the body of 'do'")
                p = self.expect(k + 1, "(", "after 'while'")
                return self.expect(self.matching(p, "(", ")") + 1, ";", "after 'do ... while (...)'")
            if w == "try":
                b = self.expect(i + 1, "{", "after 'try'")
                end = self.matching(b, "{", "}")
                while True:
                    k = self.sig(end + 1)
                    if k >= self.n or self.toks[k].text != "catch":
                        return end
                    p = self.expect(k + 1, "(", "after 'catch'")
                    b = self.expect(self.matching(p, "(", ")") + 1, "{", "after 'catch (...)'")
                    end = self.matching(b, "{", "}")
            if w in ("case", "default"):
                j = i + 1
                while j < self.n and self.toks[j].text != ":":
                    j += 1
                return self.statement(j + 1)[1]
            k = self.sig(i + 1)
            if (k + 1 < self.n and self.toks[k].text == ":" and self.toks[k + 1].text != ":"
                    and w not in ("public", "private", "protected")):
                return self.statement(k + 1)[1]  # a label
        # an expression or declaration statement: up to ';' outside brackets
        depth = 0
        j = i
        while j < self.n:
            t = self.toks[j]
            if t.kind == "pp":
                j = self.else_skip.get(j, j) + 1
                continue
            if t.kind == "punct":
                if t.text in "([{":
                    depth += 1
                elif t.text in ")]}":
                    depth -= 1
                    if depth < 0:
                        self.error(j, f"unexpected '{t.text}' inside a statement")
                elif t.text == ";" and depth == 0:
                    return j
            j += 1
        self.error(i, "statement without ';' before the end of the file")
