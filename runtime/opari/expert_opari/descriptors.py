"""POMP context descriptors: one per instrumented construct (name, sub-name, number of sections, file,
begin and end lines; runtime/include/pomp.h's ``struct ompregdescr``), written as C.

C sources get one static descriptor per construct at the top of the instrumented file, passed to the
POMP calls by address.  Fortran cannot take the address of a C descriptor: every construct gets an
INTEGER handle ``base + k`` instead, and the descriptors go into a C table beside the instrumented
file (``<output stem>_tab.c``) whose constructor registers it with the runtime
(``POMP_Fortran_register``, runtime/src/pomp_fortran.c).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

SLOTS = 4096  # descriptors per source; must match POMP_F_SLOTS in runtime/src/pomp_fortran.c


def c_escape(s: str) -> str:
    """Backslashes and double quotes escaped for a C string literal (or a line marker)."""
    return s.replace("\\", "\\\\").replace('"', '\\"')


def c_string(s: str, newlines: bool = False) -> str:
    """A C string literal of ``s``; ``newlines``: also escape line feeds (the Fortran table does)."""
    text = c_escape(s)
    return '"' + (text.replace("\n", "\\n") if newlines else text) + '"'


# ----------------------------------------------------------------------------------------------
# C: static descriptors in the instrumented source
# ----------------------------------------------------------------------------------------------
@dataclass
class Descriptor:
    var: str
    name: str
    sub_name: str
    num_sections: int
    begin_line1: int
    begin_lineN: int
    end_line1: int
    end_lineN: int


def c_descriptors(descriptors: list[Descriptor], path: str) -> list[str]:
    """The definitions of the static descriptors of a C source, one line each (newline included)."""
    fname = c_string(path)
    return [f"static POMP_DESCRIPTOR struct ompregdescr {dsc.var} = {{{c_string(dsc.name)}, {c_string(dsc.sub_name)}, "
            f"{dsc.num_sections}, {fname}, {dsc.begin_line1}, {dsc.begin_lineN}, {dsc.end_line1}, "
            f"{dsc.end_lineN}, {{0, 0, 0, 0}}, 0}};\n" for dsc in descriptors]


# ----------------------------------------------------------------------------------------------
# Fortran: handles and the C table beside the instrumented source
# ----------------------------------------------------------------------------------------------
@dataclass
class FortranDescriptor:
    name: str
    sub_name: str
    begin: tuple[int, int]  # 1-based lines of the opening directive
    end: tuple[int, int] = (0, 0)
    num_sections: int = 0


def handle_base(path: str, text: str) -> int:
    """The source's first handle: a multiple of SLOTS from a CRC of its name and text (never 0)."""
    fid = zlib.crc32((path + "\0" + text).encode("utf-8", "surrogateescape")) & 0x7FFFF
    return (fid or 1) * SLOTS


def table_path(out: str) -> str:
    """The descriptor table written beside an instrumented Fortran file: app.pomp.f90 -> app.pomp_tab.c."""
    stem = out.rsplit(".", 1)[0]
    return stem + "_tab.c"


def fortran_table(path: str, base: int, descrs: list[FortranDescriptor]) -> str:
    """The C source of a Fortran file's descriptor table; handle base + k is entry k (1-based)."""
    f = c_string(path, newlines=True)
    rows = [f"    {{{c_string(x.name, newlines=True)}, {c_string(x.sub_name, newlines=True)}, {x.num_sections}, "
            f"{f}, {x.begin[0]}, {x.begin[1]}, {x.end[0]}, {x.end[1]}, {{0, 0, 0, 0}}, 0}}," for x in descrs]
    head = (f"/* POMP descriptors of {path}, written by expert-instrument: handle {base} + k is "
            f"entry k (1-based) */\n#include <pomp.h>\n")
    if not rows:
        return head
    return (head + "static struct ompregdescr pomp_descr[] = {\n" + "\n".join(rows) + "\n};\n"
            "__attribute__((constructor)) static void pomp_register(void)\n{\n"
            f"    POMP_Fortran_register({base}, pomp_descr, {len(rows)});\n}}\n")
