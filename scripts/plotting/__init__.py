"""The course's figures and tables, generated from the committed benchmark JSON (scripts/plot.py
is the command line). One module per job:

  load.py            the chapter JSON, the peers' JSON (peer_*.json) and the side files
                     (chapter 12's *.paths.json, chapter 09's *.accuracy.json), with the one
                     parser of benchmark names (parse_name)
  ncu.py             the profiler CSVs (*.ncu.csv) and the short names of their kernels
  style.py           what each figure compares (the previous-chapter table), colours, axes
  figures.py         the chapter figures, progression.png and peers.png (matplotlib)
  tables.py          results, summary, vs_copy, accuracy and paths tables
  peer_tables.py     peers and twins tables
  profile_tables.py  profile, sectors and balance tables
  markers.py         the README/lesson markers: rewrite_markers, value

Only figures.py and style.py import matplotlib: the tables run on any python3.
"""
import re

REFERENCE_GPU = "h100-80gb-hbm3"  # the GPU whose numbers the lessons quote
DTYPES = ["f32", "f16", "bf16"]


class DataError(Exception):
    """Data that cannot be parsed, or a marker that names data that does not exist."""


def chapter_number(name):
    """'ch06_bank_conflict_free_softmax' -> 6; None for a name that is not a chapter's."""
    m = re.match(r"ch(\d\d)_", name)
    return int(m[1]) if m else None
