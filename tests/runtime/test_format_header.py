"""runtime/include/elg_format.h mirrors tracefmt/layout.py number for number: check every constant.

The header is parsed as text (no compiler needed): every ``#define ELG_*`` must be a known scalar of
layout.py with the same value, every enum must match its IntEnum member for member (both ways), and
the C event record must have the fields of ``EVENT_DTYPE`` in the same order and sizes.
"""
from __future__ import annotations

import re

import pytest

from runtime_harness import RUNTIME
from tracefmt import layout

HEADER = RUNTIME / "include" / "elg_format.h"

# C enum -> (IntEnum of layout.py, prefix of the C names)
ENUMS = {
    "elg_block_kind": (layout.BlockKind, "ELG_BLOCK_"),
    "elg_def_type": (layout.DefType, "ELG_DEF_"),
    "elg_paradigm": (layout.Paradigm, "ELG_PARADIGM_"),
    "elg_role": (layout.Role, "ELG_ROLE_"),
    "elg_lock_kind": (layout.LockKind, "ELG_LOCK_"),
    "elg_event_type": (layout.EventType, "ELG_"),
    "elg_send_flag": (layout.SendFlag, "ELG_SEND_"),
    "elg_recv_flag": (layout.RecvFlag, "ELG_RECV_"),
    "elg_file_io_flag": (layout.FileIoFlag, "ELG_FILE_IO_"),
    "elg_rma_flag": (layout.RmaFlag, "ELG_RMA_"),
    "elg_rma_atomic": (layout.RmaAtomic, "ELG_RMA_ATOMIC_"),
    "elg_rma_sync": (layout.RmaSync, "ELG_RMA_SYNC_"),
    "elg_rma_sync_flag": (layout.RmaSyncFlag, "ELG_RMA_SYNC_"),
    "elg_task_flag": (layout.TaskFlag, "ELG_TASK_"),
    "elg_task_switch": (layout.TaskSwitch, "ELG_TASK_SWITCH_"),
}
# layout.py's enums that the runtime does not need (it writes METRIC definitions with fixed codes)
NOT_MIRRORED = {"MetricDtype", "MetricMode"}
C_SIZES = {"uint8_t": 1, "uint16_t": 2, "uint32_t": 4, "uint64_t": 8}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def c_string(literals: str) -> bytes:
    """The bytes of adjacent C string literals ("a" "b"), with C's escapes (\\x takes every hex digit)."""
    out = bytearray()
    simple = {"n": 10, "r": 13, "t": 9, "0": 0, "\\": 92, '"': 34, "'": 39, "a": 7, "b": 8, "f": 12, "v": 11}
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', literals)
    assert re.fullmatch(r'\s*(?:"(?:[^"\\]|\\.)*"\s*)+', literals), f"not a string literal: {literals!r}"
    for part in parts:
        i = 0
        while i < len(part):
            ch = part[i]
            if ch != "\\":
                out += ch.encode("ascii")
                i += 1
                continue
            nxt = part[i + 1]
            if nxt == "x":
                m = re.match(r"[0-9a-fA-F]+", part[i + 2 :])
                value = int(m.group(0), 16)
                assert value <= 0xFF, f"\\x escape {m.group(0)} does not fit a char in {literals!r}"
                out.append(value)
                i += 2 + len(m.group(0))
            elif nxt in "01234567":
                m = re.match(r"[0-7]{1,3}", part[i + 1 :])
                out.append(int(m.group(0), 8))
                i += 1 + len(m.group(0))
            else:
                out.append(simple[nxt])
                i += 2
    return bytes(out)


def c_int(token: str) -> int:
    m = re.fullmatch(r"\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*", token)
    assert m, f"not an integer constant: {token!r}"
    return int(m.group(1), 0)


def parse_header():
    text = strip_comments(HEADER.read_text())
    defines = {}
    for name, value in re.findall(r"^\s*#define\s+(ELG_\w+)\s+(.+?)\s*$", text, flags=re.M):
        if name == "ELG_FORMAT_H":
            continue
        defines[name] = c_string(value) if '"' in value else c_int(value)
    enums = {}
    for name, body in re.findall(r"\benum\s+(\w+)\s*\{(.*?)\}", text, flags=re.S):
        members = {}
        for item in filter(None, (s.strip() for s in body.split(","))):
            m = re.fullmatch(r"(\w+)\s*=\s*(\S+)", item)
            assert m, f"enum {name}: member without an explicit value: {item!r}"
            members[m.group(1)] = c_int(m.group(2))
        enums[name] = members
    m = re.search(r"typedef\s+struct\s+elg_event\s*\{(.*?)\}\s*elg_event\s*;", text, flags=re.S)
    assert m, "no struct elg_event"
    fields = []
    for decl in filter(None, (s.strip() for s in m.group(1).split(";"))):
        ctype, names = decl.split(None, 1)
        fields += [(n.strip(), C_SIZES[ctype]) for n in names.split(",")]
    return defines, enums, fields


def test_header_parses_and_has_everything():
    defines, enums, fields = parse_header()
    assert defines and set(enums) == set(ENUMS) and len(fields) == 9


def test_scalar_constants_match_layout():
    defines, _, _ = parse_header()
    for name, value in defines.items():
        py_name = name.removeprefix("ELG_")
        assert hasattr(layout, py_name), f"{name} has no counterpart layout.{py_name}"
        assert value == getattr(layout, py_name), f"{name} = {value!r} but layout.{py_name} = {getattr(layout, py_name)!r}"


def test_every_layout_scalar_is_in_the_header():
    """The numbers the runtime writes: magic, versions, sizes, flags, sentinels."""
    defines, _, _ = parse_header()
    wanted = ["MAGIC", "VERSION_MAJOR", "VERSION_MINOR", "FILE_HEADER_SIZE", "CREATOR_SIZE", "HEADER_CRC_OFFSET",
              "BYTE_ORDER_LITTLE", "BYTE_ORDER_BIG", "FLAG_FINISHED", "BLOCK_MAGIC", "BLOCK_HEADER_SIZE",
              "BLOCK_ALIGN", "INDEX_ENTRY_SIZE", "TRAILER_MAGIC", "TRAILER_SIZE", "NO_ID", "ANY",
              "DEF_RECORD_HEADER_SIZE", "EVENT_RECORD_SIZE"]
    missing = [n for n in wanted if "ELG_" + n not in defines]
    assert missing == []


@pytest.mark.parametrize("c_enum", sorted(ENUMS))
def test_enum_matches_layout(c_enum):
    _, enums, _ = parse_header()
    py_enum, prefix = ENUMS[c_enum]
    c_members = enums[c_enum]
    for name, value in c_members.items():
        assert name.startswith(prefix), f"{c_enum}: {name} lacks the prefix {prefix}"
    got = {name.removeprefix(prefix): value for name, value in c_members.items()}
    want = {m.name: int(m.value) for m in py_enum}
    assert got == want, f"enum {c_enum} differs from layout.{py_enum.__name__}"


def test_every_layout_enum_is_mirrored():
    py_enums = {name for name, obj in vars(layout).items()
                if isinstance(obj, type) and issubclass(obj, int) and obj.__module__ == layout.__name__}
    mirrored = {py.__name__ for py, _ in ENUMS.values()}
    assert py_enums - mirrored == NOT_MIRRORED


def test_event_record_matches_dtype():
    _, _, fields = parse_header()
    dtype = layout.EVENT_DTYPE
    assert fields == [(name, dtype.fields[name][0].itemsize) for name in dtype.names]
    assert sum(size for _, size in fields) == layout.EVENT_RECORD_SIZE
