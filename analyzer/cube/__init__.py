"""The severity cube and its files.

:mod:`.model` is the data model (:class:`Cube` and its metric, region and
location descriptions); each file format has a module of its own that reads
and/or writes a :class:`Cube`: CUBE4 ``.cubex`` writing (:mod:`.cubex_write`),
checking (:mod:`.cubex_check`) and CUBE4/CUBE3 reading (:mod:`.cubex_read`), over
the tar container helpers of :mod:`.tar`; the JSON summary (:mod:`.json_summary`)
and HDF5 (:mod:`.hdf5`).  The model imports none of them.  :mod:`.files` reads
any result file by its content, :mod:`.compare` is the one comparator of
results (matched by names, not ids).  This package joins them under one name.
"""

from .model import Cube, CubeError, CubeFormatError, LocationInfo, MetricInfo, RegionInfo, region_strings
from .cubex_check import check_cubex
from .cubex_read import read_cube3, read_cubex
from .cubex_write import cubex_bytes, write_cubex
from .json_summary import read_json, write_json
from .hdf5 import read_hdf5, write_hdf5
from .compare import compare_json, diff_cubes
from .files import ResultFileError, open_cube, read_result

__all__ = [
    "Cube", "CubeError", "CubeFormatError", "MetricInfo", "RegionInfo", "LocationInfo", "region_strings",
    "diff_cubes", "read_cubex", "read_cube3", "check_cubex", "write_cubex", "cubex_bytes", "read_json", "write_json",
    "compare_json", "read_hdf5", "write_hdf5", "ResultFileError", "open_cube", "read_result",
]
