"""The severity cube and its files.

:mod:`.model` is the data model (:class:`Cube` and its metric, region and
location descriptions); each file format has a module of its own that reads
and/or writes a :class:`Cube`: CUBE4 ``.cubex`` and CUBE3 (:mod:`.cubex`),
the JSON summary (:mod:`.json_summary`) and HDF5 (:mod:`.hdf5`).  The model
imports none of them; this package joins them under one name.
"""

from .model import Cube, CubeError, CubeFormatError, LocationInfo, MetricInfo, RegionInfo, diff_cubes, region_strings
from .cubex import check_cubex, read_cube3, read_cubex, write_cubex
from .json_summary import compare_json, read_json, write_json
from .hdf5 import read_hdf5, write_hdf5

__all__ = [
    "Cube", "CubeError", "CubeFormatError", "MetricInfo", "RegionInfo", "LocationInfo", "region_strings",
    "diff_cubes", "read_cubex", "read_cube3", "check_cubex", "write_cubex", "read_json", "write_json",
    "compare_json", "read_hdf5", "write_hdf5",
]
